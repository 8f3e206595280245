import Foundation
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
            root = try Yams.compose(yaml: yaml).map { try value(of: $0, at: "") }
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(key: "(file)", problem: "not valid YAML: \(error)")
        }
        var overrides: [String: ConfigValue] = [:]
        for (name, text) in environment where name.hasPrefix("HERALD_") && reservedVariables.contains(name) == false {
            overrides[name] = try overrideValue(text, variable: name)
        }
        let session = ConfigReader.Session(environment: overrides)
        var configuration = try HeraldConfiguration(reader: try ConfigReader(root: root, session: session))
        if let unknown = session.unusedEnvironment().first {
            throw ConfigError(key: unknown, problem: "environment variable matches no configuration key (HERALD_<UPPER_SNAKE_PATH>, e.g. HERALD_SMS_HTTP_URL)")
        }
        configuration.sms.templates = try loadTemplates(
            directory: configuration.sms.templateDir, key: "sms.templateDir",
            files: HeraldConfiguration.smsTemplateNames.map { ("\($0).txt", $0) }, placeholders: HeraldConfiguration.smsTextPlaceholders)
        configuration.email.templates = try loadTemplates(
            directory: configuration.email.templateDir, key: "email.templateDir",
            files: HeraldConfiguration.emailTemplateFiles.map { ($0, $0) }, placeholders: HeraldConfiguration.emailPlaceholders)
        return configuration
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
            guard let node = try Yams.compose(yaml: trimmed) else { return .scalar("", plain: true) }
            return try value(of: node, at: variable)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(key: variable, problem: "not valid YAML flow syntax: \(error)")
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
    /// Loads like `load`, but prints a configuration error the way an operator wants to read it
    /// (one line naming the key) and exits with status 78 (EX_CONFIG) instead of throwing.
    public static func loadOrExit(path: String?) throws -> (configuration: HeraldConfiguration, path: String) {
        try orExit { try load(path: path) }
    }

    /// Runs `body`; a ConfigError it throws is printed as one line and ends the process with 78
    /// (EX_CONFIG), like an invalid file. For checks only one executable makes (a key file it reads).
    public static func orExit<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ConfigError {
            FileHandle.standardError.write(Data("herald: invalid configuration: \(error)\n".utf8))
            exit(78)
        }
    }
}
