import Foundation

/// `application/x-www-form-urlencoded`, both ways: the bodies of siteverify, Apple's `/auth/token`
/// and `/auth/revoke`, securetoken requests, and the `postBody` of `signInWithIdp`.
public enum FormEncoding {
    /// `name=value&…` with everything but unreserved characters percent-encoded.
    public static func encode(_ fields: [(name: String, value: String)]) -> String {
        fields.map { "\(component($0.name))=\(component($0.value))" }.joined(separator: "&")
    }

    /// The fields of a form (`+` is a space; the last of repeated names wins; names never empty).
    public static func decode(_ text: some StringProtocol) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in pairs(text) { fields[name] = value }
        return fields
    }

    /// Every field of a form in order, repeated names kept (a signature over all of them needs each).
    public static func pairs(_ text: some StringProtocol) -> [(name: String, value: String)] {
        text.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                let spaced = $0.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            guard let name = parts.first, name.isEmpty == false else { return nil }
            return (name, parts.count > 1 ? parts[1] : "")
        }
    }

    static let unreserved: CharacterSet = {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~")
        return allowed
    }()

    static func component(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
