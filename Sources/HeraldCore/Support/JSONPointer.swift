import Foundation

/// An RFC 6901 JSON pointer (`/id`, `/messages/0/id`; `~1` is `/`, `~0` is `~`): where a gateway's
/// answer keeps the provider's message id (`sms.http.messageIdPath`).
public struct JSONPointer: Sendable, Equatable {
    public let tokens: [String]

    /// nil unless `text` is empty (the whole document) or starts with `/`.
    public init?(_ text: String) {
        guard text.isEmpty || text.hasPrefix("/") else { return nil }
        tokens =
            text.isEmpty
            ? []
            : text.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            }
    }

    /// The string or number the pointer names in `json` (numbers as their text), nil when the document
    /// is not JSON, the pointer leads nowhere, or the value is an object, array or null.
    public func text(in json: Data) -> String? {
        guard var value = try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]) else { return nil }
        for token in tokens {
            if let object = value as? [String: Any], let next = object[token] {
                value = next
            } else if let array = value as? [Any], let index = Int(token), token.allSatisfy(\.isNumber), array.indices.contains(index) {
                value = array[index]
            } else {
                return nil
            }
        }
        if let text = value as? String { return text }
        if let number = value as? NSNumber { return number.stringValue }
        return nil
    }
}
