import ArgumentParser
import Foundation
import HeraldAMQP
import HeraldChannels
import HeraldCore
import Yams

/// Loads config/herald.yaml (or `--config`, or `HERALD_CONFIG`), applies `HERALD_*` overrides and
/// validates everything, so every executable refuses a bad configuration in the same words.
public enum ConfigurationLoader {
    /// The default path, relative to the working directory.
    public static let defaultPath = "config/herald.yaml"

    /// Variables that configure the loader itself rather than a key.
    static let reservedVariables: Set<String> = ["HERALD_CONFIG"]

    /// Loads the file at `path` (else `HERALD_CONFIG`, else the default) with `environment` overrides.
    public static func load(
        path: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> (configuration: HeraldConfiguration, path: String) {
        let resolved = path ?? environment["HERALD_CONFIG"] ?? defaultPath
        guard let text = FileManager.default.contents(atPath: resolved).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw ConfigError(key: "(file)", problem: "cannot read configuration file '\(resolved)'")
        }
        do {
            return (try parse(yaml: text, environment: environment), resolved)
        } catch let error as ConfigError {
            throw ConfigError(key: error.key, problem: "\(error.problem) [in \(resolved)]")
        }
    }

    /// Parses configuration text with `environment` overrides.
    public static func parse(yaml: String, environment: [String: String] = [:]) throws -> HeraldConfiguration {
        let root: ConfigValue?
        do {
            // Resolver.basic: the loader types every value itself (from its text and style), so Yams's
            // implicit typing, a dozen regular expressions that mapped megabytes of ICU into every
            // process, is not needed.
            root = try Yams.compose(yaml: yaml, .basic).map { try value(of: $0, at: "") }
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(key: "(file)", problem: "not valid YAML: \(Self.safeDescription(error))")
        }
        // Only variables under a top-level key are Herald's to validate; the rest, and Kubernetes service
        // links (a Service named `herald` injects `HERALD_PORT=tcp://…`, `HERALD_SERVICE_HOST`, …), are left
        // alone and listed in `ignoredEnvironment`. A value that does not parse is an error only for a
        // variable that turns out to be Herald's.
        var overrides: [String: ConfigValue] = [:]
        var unparsable: [String: ConfigError] = [:]
        for (name, text) in environment where name.hasPrefix("HERALD_") && reservedVariables.contains(name) == false {
            guard isKubernetesServiceLink(name, value: text) == false else { continue }
            do {
                overrides[name] = try overrideValue(text, variable: name)
            } catch let error as ConfigError {
                unparsable[name] = error
            }
        }
        let session = ConfigReader.Session(environment: overrides)
        var configuration = try HeraldConfiguration(reader: try ConfigReader(root: root, session: session))
        for name in (session.unusedEnvironment() + unparsable.keys).sorted() where session.isUnderConfiguration(name) {
            if let error = unparsable[name] { throw error }
            var problem = "environment variable matches no configuration key (HERALD_<UPPER_SNAKE_PATH>, e.g. HERALD_SMS_HTTP_URL)"
            if let suggestion = session.suggestion(for: name) { problem += "; did you mean \(suggestion)?" }
            throw ConfigError(key: name, problem: problem)
        }
        let unused = Set(session.unusedEnvironment())
        configuration.ignoredEnvironment = environment.keys.filter { name in
            name.hasPrefix("HERALD_") && reservedVariables.contains(name) == false && (overrides[name] == nil || unused.contains(name))
        }.sorted()
        configuration.sms.templates = try loadTemplates(
            directory: configuration.sms.templateDir, key: "sms.templateDir",
            files: SMSSettings.templateNames.map { ("\($0).txt", $0) }, placeholders: SMSSettings.textPlaceholders)
        configuration.email.templates = try loadTemplates(
            directory: configuration.email.templateDir, key: "email.templateDir",
            files: EmailSettings.templateFiles.map { ($0, $0) }, placeholders: EmailSettings.placeholders)
        if let file = configuration.amqp.passwordFile {
            let password = try readSecret(file, key: "amqp.passwordFile")
            for index in configuration.amqp.endpoints.indices { configuration.amqp.endpoints[index].password = password }
        }
        return configuration
    }

    /// The first line of a secret file (a mounted Kubernetes Secret, a systemd credential), trailing
    /// newline and spaces dropped; never echoed in errors.
    static func readSecret(_ path: String, key: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(key: key, problem: "cannot read '\(path)'")
        }
        let secret = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map {
            String($0).trimmingCharacters(in: .whitespaces)
        }
        guard let secret, secret.isEmpty == false else { throw ConfigError(key: key, problem: "'\(path)' is empty") }
        return secret
    }

    /// The variables Kubernetes sets for a Service: `<S>_SERVICE_HOST`, `<S>_SERVICE_PORT[_<NAME>]`,
    /// `<S>_PORT=tcp://…` and `<S>_PORT_<n>_<TCP|UDP|SCTP>[_PROTO|_PORT|_ADDR]`. No configuration key has
    /// such a name, except that `<S>_PORT` can look like `HERALD_HTTP_PORT`: that one is told by its
    /// value, a URL no port key accepts.
    static func isKubernetesServiceLink(_ name: String, value: String) -> Bool {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false)
        if let service = parts.lastIndex(of: "SERVICE"), service + 1 < parts.count {
            if parts[service + 1] == "HOST" && service + 2 == parts.count { return true }
            if parts[service + 1] == "PORT" { return true }
        }
        if parts.last == "PORT", ["tcp://", "udp://", "sctp://"].contains(where: value.lowercased().hasPrefix) { return true }
        for index in parts.indices where parts[index] == "PORT" && index + 2 < parts.count {
            guard parts[index + 1].allSatisfy(\.isNumber), ["TCP", "UDP", "SCTP"].contains(parts[index + 2]) else { continue }
            if index + 3 == parts.count { return true }
            if index + 4 == parts.count, ["PROTO", "PORT", "ADDR"].contains(parts[index + 3]) { return true }
        }
        return false
    }

    /// Reads `<directory>/<locale>/<file>` for every locale directory into the catalog under `name`;
    /// `en` must hold every file.
    static func loadTemplates(
        directory: String, key: String, files templateFiles: [(file: String, name: String)], placeholders: Set<String>
    ) throws -> TemplateCatalog {
        let files = FileManager.default
        guard let locales = try? files.contentsOfDirectory(atPath: directory) else {
            throw ConfigError(key: key, problem: "cannot read the template directory '\(directory)'")
        }
        var catalog: [String: [String: Template]] = [:]
        for locale in locales.sorted() {
            var isDirectory: ObjCBool = false
            guard files.fileExists(atPath: directory + "/" + locale, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            guard locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw ConfigError(key: key, problem: "'\(locale)' is not a locale directory name (en, de, pt-br …)")
            }
            for (file, name) in templateFiles {
                let path = "\(directory)/\(locale)/\(file)"
                guard let data = files.contents(atPath: path) else { continue }
                var text = String(decoding: data, as: UTF8.self)
                while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
                do {
                    catalog[locale, default: [:]][name] = try Template(text, allowed: placeholders)
                } catch {
                    throw ConfigError(key: key, problem: "\(path): \(error.problem)")
                }
            }
        }
        for (file, name) in templateFiles where catalog[TemplateCatalog.defaultLocale]?[name] == nil {
            throw ConfigError(key: key, problem: "\(directory)/\(TemplateCatalog.defaultLocale)/\(file) is missing (every lookup falls back to en)")
        }
        return TemplateCatalog(catalog)
    }

    /// An environment value: YAML flow syntax for lists and mappings (`["5/1h"]`, `{a: b}`), else a scalar.
    static func overrideValue(_ text: String, variable: String) throws -> ConfigValue {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("[") || trimmed.hasPrefix("{") else { return .scalar(text, plain: true) }
        do {
            guard let node = try Yams.compose(yaml: trimmed, .basic) else { return .scalar("", plain: true) }
            return try value(of: node, at: variable)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(key: variable, problem: "not valid YAML flow syntax: \(Self.safeDescription(error))")
        }
    }

    /// What went wrong and where, without the document: Yams's own description quotes the whole
    /// file (passwords in `store.url` and `amqp.url`, SMTP credentials) into the error.
    static func safeDescription(_ error: any Error) -> String {
        guard let yaml = error as? YamlError else { return "unreadable" }
        switch yaml {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return "\(problem) at line \(mark.line), column \(mark.column)"
        case .reader(let problem, let offset, _, _):
            return "\(problem)\(offset.map { " at byte \($0)" } ?? "")"
        case .duplicatedKeysInMapping(let duplicates, let context):
            return "duplicate key(s) \(duplicates.sorted().joined(separator: ", ")) at line \(context.mark.line), column \(context.mark.column)"
        default:
            return "unreadable"
        }
    }

    static func value(of node: Node, at path: String) throws -> ConfigValue {
        switch node {
        case .scalar(let scalar):
            return .scalar(scalar.string, plain: scalar.style == .plain || scalar.style == .any)
        case .sequence(let sequence):
            return .list(try sequence.enumerated().map { try value(of: $1, at: "\(path)[\($0)]") })
        case .mapping(let mapping):
            var map: [String: ConfigValue] = [:]
            for (key, item) in mapping {
                guard let name = key.scalar?.string else {
                    throw ConfigError(key: path.isEmpty ? "(root)" : path, problem: "mapping keys must be plain strings")
                }
                let childPath = path.isEmpty ? name : "\(path).\(name)"
                guard map[name] == nil else { throw ConfigError(key: childPath, problem: "key appears twice") }
                map[name] = try value(of: item, at: childPath)
            }
            return .map(map)
        case .alias:
            throw ConfigError(key: path.isEmpty ? "(root)" : path, problem: "YAML aliases are not supported")
        }
    }
}

extension ConfigurationLoader {
    /// Loads like `load`, but prints a configuration error the way an operator wants to read it (one
    /// line naming the key) and throws `ExitCode(78)` (EX_CONFIG), which the executable's `run()` hands
    /// back to ArgumentParser as its exit status.
    public static func loadOrExitCode(path: String?) throws -> (configuration: HeraldConfiguration, path: String) {
        try orExitCode { try load(path: path) }
    }

    /// Runs `body`; a ConfigError it throws is printed as one line and becomes `ExitCode(78)`, like an
    /// invalid file. For checks only one executable makes (a key file it reads).
    public static func orExitCode<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ConfigError {
            LineOutput.installProcessWide()
            LineOutput.standardError.write("herald: invalid configuration: \(error)")
            throw ExitCode(78)
        }
    }
}
