import Foundation

/// A configured sender (`Herald <no-reply@example.com>` or a bare address): the display name goes into
/// the From header (RFC 2047-encoded when it is not ASCII), the address also into SMTP's MAIL FROM.
public struct Mailbox: Sendable, Equatable {
    public var displayName: String?
    public var address: String

    public init(displayName: String?, address: String) {
        self.displayName = displayName
        self.address = address
    }

    /// `Name <a@b>`, `"Name" <a@b>`, `<a@b>` or `a@b`; the address needs one `@` and no spaces or
    /// brackets (a domain without a dot, such as `localhost`, is allowed for local set-ups).
    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.contains(where: { $0 == "\r" || $0 == "\n" }) == false else { return nil }
        var name: String?
        var address = trimmed
        if let open = trimmed.lastIndex(of: "<"), trimmed.hasSuffix(">") {
            address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
            let rawName = trimmed[..<open].trimmingCharacters(in: .whitespaces)
            let unquoted = rawName.hasPrefix("\"") && rawName.hasSuffix("\"") && rawName.count >= 2 ? String(rawName.dropFirst().dropLast()) : rawName
            name = unquoted.isEmpty ? nil : unquoted
        }
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.isEmpty == false }),
            address.allSatisfy({ $0.isASCII && $0.isWhitespace == false && "<>,;\"()[]\\".contains($0) == false })
        else { return nil }
        self.displayName = name
        self.address = address
    }

    /// The part after `@` (Message-IDs are minted on it).
    public var domain: String { String(address[address.index(after: address.lastIndex(of: "@")!)...]) }

    /// The header form.
    public var headerValue: String {
        guard let displayName else { return address }
        if displayName.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) {
            let escaped = displayName.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return "\"\(escaped)\" <\(address)>"
        }
        return EncodedWord.encode(displayName) + " <\(address)>"
    }
}
