import Foundation

/// A configuration tree as read from YAML or an environment variable, before the schema gives it types.
///
/// Scalars keep their text: the schema decides whether `012345` is a string (a test code) or a number,
/// which a YAML resolver would otherwise guess wrongly.
public indirect enum ConfigValue: Sendable, Equatable {
    /// A scalar's text; `plain` is false when it was quoted (so `"null"` stays a string).
    case scalar(String, plain: Bool)
    case list([ConfigValue])
    case map([String: ConfigValue])

    /// True for YAML's null spellings (`null`, `~`, empty) when unquoted.
    public var isNull: Bool {
        if case .scalar(let text, plain: true) = self { return ["", "~", "null", "Null", "NULL"].contains(text) }
        return false
    }
}

/// A configuration problem, always naming the key (and the environment variable when one was used).
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    /// Dotted path with list indices, e.g. `projects[0].phone.codeTTL`.
    public var key: String
    /// What is wrong, in words an operator can act on.
    public var problem: String

    public init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { "configuration key '\(key)': \(problem)" }
}
