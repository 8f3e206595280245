import Foundation
import HeraldCore

/// Reads one section of the configuration tree strictly: every key must be read by the schema, every
/// value must have the expected shape, and `HERALD_<UPPER_SNAKE_PATH>` environment variables override keys.
///
/// Typos must not silently fall back to defaults, so `finish()` reports keys the schema did not read,
/// and `ConfigReader.Session.unusedEnvironment()` reports `HERALD_*` variables that matched no key.
public struct ConfigReader {
    /// State shared by all readers of one decoding pass.
    public final class Session {
        let environment: [String: ConfigValue]
        var usedEnvironment: Set<String> = []
        /// Every variable name the schema looked for (for did-you-mean suggestions).
        var knownEnvironment: Set<String> = []
        /// Upper-snake names of the top-level keys (`HTTP`, `DEV_MODE`, `PROJECTS`, …).
        var topLevelNames: Set<String> = []

        /// `environment` maps variable names (`HERALD_SMS_HTTP_URL`) to already-parsed values.
        public init(environment: [String: ConfigValue]) {
            self.environment = environment
        }

        /// Variables in the environment that no key read.
        public func unusedEnvironment() -> [String] {
            environment.keys.filter { usedEnvironment.contains($0) == false }.sorted()
        }

        /// True when `variable` names a configuration path at least down to a top-level key
        /// (`HERALD_HTTP_PROT` does, `HERALD_SERVICE_HOST` does not): only those are Herald's to validate.
        public func isUnderConfiguration(_ variable: String) -> Bool {
            guard variable.hasPrefix("HERALD_") else { return false }
            let rest = variable.dropFirst("HERALD_".count)
            return topLevelNames.contains { rest == $0 || rest.hasPrefix($0 + "_") }
        }

        /// The known variable closest to `variable`, for a did-you-mean.
        public func suggestion(for variable: String) -> String? {
            ConfigReader.closest(to: variable, among: knownEnvironment)
        }
    }

    let session: Session
    let path: [String]
    let values: [String: ConfigValue]
    private let consumed: Box = Box()

    private final class Box { var keys: Set<String> = [] }

    /// A reader for the root of `value` (which must be a map, or null for an empty file).
    public init(root value: ConfigValue?, session: Session) throws {
        self.session = session
        self.path = []
        switch value {
        case nil: self.values = [:]
        case .some(let node) where node.isNull: self.values = [:]
        case .map(let map): self.values = map
        default: throw ConfigError(key: "(root)", problem: "the file must be a YAML mapping of sections")
        }
    }

    private init(session: Session, path: [String], values: [String: ConfigValue]) {
        self.session = session
        self.path = path
        self.values = values
    }

    // MARK: naming

    /// `projects[0].phone.codeTTL` for a key under this section.
    public func keyPath(_ key: String) -> String {
        Self.render(path + [key])
    }

    static func render(_ components: [String]) -> String {
        var text = ""
        for component in components {
            if component.allSatisfy(\.isNumber), component.isEmpty == false {
                text += "[\(component)]"
            } else {
                text += text.isEmpty ? component : ".\(component)"
            }
        }
        return text
    }

    /// `HERALD_PROJECTS_0_PHONE_CODE_TTL` for a key under this section.
    public func environmentName(_ key: String) -> String {
        "HERALD_" + (path + [key]).map(Self.upperSnake).joined(separator: "_")
    }

    /// `codeTTL` → `CODE_TTL`, `metricsPort` → `METRICS_PORT`, `iosBundleIds` → `IOS_BUNDLE_IDS`.
    static func upperSnake(_ name: String) -> String {
        let characters = Array(name)
        var out = ""
        for (index, character) in characters.enumerated() {
            if index > 0, character.isUppercase {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                    out += "_"
                }
            }
            out += character.uppercased()
        }
        return out
    }

    // MARK: raw access

    /// The raw value of `key`, preferring its environment override; marks the key as read.
    public func raw(_ key: String) -> (value: ConfigValue, source: String)? {
        consumed.keys.insert(key)
        let variable = environmentName(key)
        session.knownEnvironment.insert(variable)
        session.topLevelNames.insert(Self.upperSnake(path.first ?? key))
        if let override = session.environment[variable] {
            session.usedEnvironment.insert(variable)
            // HERALD_…=null unsets a key, as `key: null` does in the file.
            return override.isNull ? nil : (override, "\(variable) (\(keyPath(key)))")
        }
        guard let value = values[key], value.isNull == false else { return nil }
        return (value, keyPath(key))
    }

    /// Fails naming every key of this section that the schema never read, with a suggestion.
    public func finish() throws {
        let unknown = values.keys.filter { consumed.keys.contains($0) == false }.sorted()
        guard let first = unknown.first else { return }
        var problem = "unknown key"
        if let suggestion = Self.closest(to: first, among: consumed.keys) {
            problem += " (did you mean '\(keyPath(suggestion))'?)"
        }
        throw ConfigError(key: keyPath(first), problem: problem)
    }

    static func closest(to word: String, among candidates: Set<String>) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for i in 1...max(a.count, 1) where a.isEmpty == false {
                var previous = row[0]
                row[0] = i
                for j in stride(from: 1, through: b.count, by: 1) {
                    let current = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1].lowercased() == b[j - 1].lowercased() ? 0 : 1))
                    previous = current
                }
            }
            return row[b.count]
        }
        let scored = candidates.map { ($0, distance(Array(word), Array($0))) }.filter { $0.1 <= max(2, word.count / 3) }
        return scored.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }?.0
    }

    // MARK: typed access

    private func scalarText(_ key: String) throws -> (String, String)? {
        guard let (value, source) = raw(key) else { return nil }
        guard case .scalar(let text, _) = value else {
            throw ConfigError(key: source, problem: "expected a single value, got a list or mapping")
        }
        return (text, source)
    }

    /// A string, or `defaultValue` when absent or null.
    public func string(_ key: String, default defaultValue: String) throws -> String {
        try optionalString(key) ?? defaultValue
    }

    /// A string, or nil when absent or null.
    public func optionalString(_ key: String) throws -> String? {
        try scalarText(key)?.0
    }

    /// A non-empty string from a fixed set of choices.
    public func choice(_ key: String, _ choices: [String], default defaultValue: String) throws -> String {
        guard let (text, source) = try scalarText(key) else { return defaultValue }
        guard choices.contains(text) else {
            throw ConfigError(key: source, problem: "must be one of \(choices.joined(separator: ", ")) (got '\(text)')")
        }
        return text
    }

    /// One of an enumeration's raw values, in the order it declares them (the error lists them so).
    public func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, default defaultValue: Choice) throws -> Choice
    where Choice.RawValue == String {
        let text = try choice(key, Choice.allCases.map(\.rawValue), default: defaultValue.rawValue)
        // `choice` let only a raw value through.
        return Choice(rawValue: text)!
    }

    /// A secret given inline (`key`) or as the first line of a file (`<key>File`, a mounted Secret),
    /// never both; nil when neither is set. The value is never echoed in errors.
    public func secret(_ key: String) throws -> String? {
        let inline = try optionalString(key)
        let file = try optionalString(key + "File")
        if inline != nil, file != nil {
            throw fail(key + "File", "set either \(keyPath(key)) or \(keyPath(key + "File")), not both")
        }
        if let file { return try ConfigurationLoader.readSecret(file, key: keyPath(key + "File")) }
        if let inline, inline.isEmpty { throw fail(key, "must not be empty") }
        return inline
    }

    /// A boolean (`true`/`false`).
    public func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let (text, source) = try scalarText(key) else { return defaultValue }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default: throw ConfigError(key: source, problem: "must be true or false (got '\(text)')")
        }
    }

    /// An integer within `range`.
    public func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let (text, source) = try scalarText(key) else { return defaultValue }
        guard let value = Int(text) else { throw ConfigError(key: source, problem: "must be an integer (got '\(text)')") }
        guard range.contains(value) else {
            throw ConfigError(key: source, problem: "must be between \(range.lowerBound) and \(range.upperBound) (got \(value))")
        }
        return value
    }

    /// A number within `range`.
    public func double(_ key: String, default defaultValue: Double, in range: ClosedRange<Double>) throws -> Double {
        guard let (text, source) = try scalarText(key) else { return defaultValue }
        guard let value = Double(text), value.isFinite else {
            throw ConfigError(key: source, problem: "must be a number (got '\(text)')")
        }
        guard range.contains(value) else {
            throw ConfigError(key: source, problem: "must be between \(range.lowerBound) and \(range.upperBound) (got \(value))")
        }
        return value
    }

    /// A duration with a unit (`500ms`, `30s`, `5m`, `6h`, `1d`) within `range`.
    public func duration(_ key: String, default defaultValue: Duration, in range: ClosedRange<Duration>) throws -> Duration {
        guard let (text, source) = try scalarText(key) else { return defaultValue }
        return try Self.duration(text, source: source, in: range)
    }

    static func duration(_ text: String, source: String, in range: ClosedRange<Duration>) throws -> Duration {
        guard let value = DurationText.parse(text) else {
            throw ConfigError(key: source, problem: "must be a duration with a unit such as 500ms, 30s, 5m, 6h or 1d (got '\(text)')")
        }
        guard range.contains(value) else {
            throw ConfigError(
                key: source,
                problem: "must be between \(DurationText.format(range.lowerBound)) and \(DurationText.format(range.upperBound)) (got \(text))")
        }
        return value
    }

    /// Base64 text that decodes to exactly `byteCount` bytes, or nil when absent or null.
    public func base64Key(_ key: String, byteCount: Int) throws -> Data? {
        guard let (text, source) = try scalarText(key) else { return nil }
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)), data.count == byteCount else {
            throw ConfigError(key: source, problem: "must be base64 of exactly \(byteCount) bytes (for example: openssl rand -base64 \(byteCount))")
        }
        return data
    }

    /// Base64 of a secret of at least `minimumBytes` (HMAC keys: longer is fine, shorter is guessable).
    public func base64Secret(_ key: String, minimumBytes: Int) throws -> Data? {
        guard let (text, source) = try scalarText(key) else { return nil }
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)), data.count >= minimumBytes else {
            throw ConfigError(key: source, problem: "must be base64 of at least \(minimumBytes) bytes (for example: openssl rand -base64 32)")
        }
        return data
    }

    /// A list of scalars (a lone scalar counts as a one-element list).
    public func stringList(_ key: String, default defaultValue: [String]) throws -> [String] {
        guard let (value, source) = raw(key) else { return defaultValue }
        switch value {
        case .scalar(let text, _): return [text]
        case .list(let items):
            return try items.enumerated().map { index, item in
                guard case .scalar(let text, _) = item, item.isNull == false else {
                    throw ConfigError(key: "\(source)[\(index)]", problem: "expected a single value")
                }
                return text
            }
        case .map: throw ConfigError(key: source, problem: "expected a list, got a mapping")
        }
    }

    /// A list of durations.
    public func durationList(_ key: String, default defaultValue: [Duration], in range: ClosedRange<Duration>) throws -> [Duration] {
        guard raw(key) != nil else { return defaultValue }
        let texts = try stringList(key, default: [])
        return try texts.enumerated().map { index, text in
            try Self.duration(text, source: "\(keyPath(key))[\(index)]", in: range)
        }
    }

    /// A list of rate policies (`5/1h`, `1000/1m burst 200`).
    public func rateList(_ key: String, default defaultValue: [RatePolicy]) throws -> [RatePolicy] {
        guard raw(key) != nil else { return defaultValue }
        return try stringList(key, default: []).enumerated().map { index, text in
            try Self.rate(text, source: "\(keyPath(key))[\(index)]")
        }
    }

    /// One rate policy, or nil when absent.
    public func rate(_ key: String, default defaultValue: RatePolicy?) throws -> RatePolicy? {
        guard let (text, source) = try scalarText(key) else { return defaultValue }
        return try Self.rate(text, source: source)
    }

    static func rate(_ text: String, source: String) throws -> RatePolicy {
        guard let policy = RatePolicy.parse(text) else {
            throw ConfigError(key: source, problem: "must be a rate such as 5/1h or 1000/1m burst 200 (got '\(text)')")
        }
        return policy
    }

    /// A mapping of string keys to scalar values (headers, test numbers).
    public func stringMap(_ key: String) throws -> [String: String] {
        guard let (value, source) = raw(key) else { return [:] }
        guard case .map(let map) = value else { throw ConfigError(key: source, problem: "expected a mapping") }
        var result: [String: String] = [:]
        for (name, item) in map {
            guard case .scalar(let text, _) = item, item.isNull == false else {
                throw ConfigError(key: "\(source).\(name)", problem: "expected a single value")
            }
            result[name] = text
        }
        return result
    }

    /// The reader for a nested section; an absent or null section reads as empty (all defaults).
    public func section(_ key: String) throws -> ConfigReader {
        guard let (value, source) = raw(key) else {
            return ConfigReader(session: session, path: path + [key], values: [:])
        }
        guard case .map(let map) = value else { throw ConfigError(key: source, problem: "expected a mapping of keys") }
        return ConfigReader(session: session, path: path + [key], values: map)
    }

    /// The keys this section has in the file, sorted (for maps keyed by name, such as `sms.prices`).
    public var keys: [String] { values.keys.sorted() }

    /// Readers for a list of sections (such as `projects`); nil when the key is absent.
    public func sectionList(_ key: String) throws -> [ConfigReader]? {
        guard let (value, source) = raw(key) else { return nil }
        guard case .list(let items) = value else { throw ConfigError(key: source, problem: "expected a list") }
        return try items.enumerated().map { index, item in
            guard case .map(let map) = item else {
                throw ConfigError(key: "\(source)[\(index)]", problem: "expected a mapping of keys")
            }
            return ConfigReader(session: session, path: path + [key, String(index)], values: map)
        }
    }

    /// Fails with a message about `key` (for checks that span several values).
    public func fail(_ key: String, _ problem: String) -> ConfigError {
        ConfigError(key: keyPath(key), problem: problem)
    }
}
