import Foundation

/// An email address as sign-in uses it: trimmed and lower-cased (Identity Toolkit matches addresses
/// case-insensitively), ASCII only, `local@domain` with a dotted domain.
///
/// The check is deliberately plain: a syntactically odd but deliverable address is the SMTP server's
/// business; what must never pass is something that could break a mail header (CR, LF, `<`, `>`, commas).
public struct EmailAddress: Sendable, Hashable, CustomStringConvertible {
    /// The normalized address.
    public let value: String

    /// Apple's Hide-My-Email relay: mail to it must come from a sender registered with Apple.
    public static let privateRelayDomain = "privaterelay.appleid.com"

    public init?(_ text: String?) {
        guard let text else { return nil }
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard trimmed.utf8.count <= 254, let at = trimmed.lastIndex(of: "@") else { return nil }
        let local = trimmed[..<at]
        let domain = trimmed[trimmed.index(after: at)...]
        guard local.isEmpty == false, local.utf8.count <= 64, domain.contains("."), domain.hasPrefix(".") == false,
            domain.hasSuffix(".") == false, domain.contains("..") == false
        else { return nil }
        let forbidden: Set<Character> = ["<", ">", ",", ";", ":", "\"", "(", ")", "[", "]", "\\", "@"]
        guard local.allSatisfy({ $0.isASCII && $0.isWhitespace == false && forbidden.contains($0) == false && $0.asciiValue! >= 0x21 }),
            domain.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
        else { return nil }
        value = trimmed
    }

    /// The mailbox the address reaches, for limits only: a `+tag` suffix of the local part is dropped,
    /// and for Gmail (which ignores dots and answers on googlemail.com too) the dots as well, so
    /// `victim+1@…` and `victim+2@…` share one allowance. Mail still goes to the address as given.
    public var mailbox: String {
        let at = value.lastIndex(of: "@")!
        var local = value[..<at]
        var domain = String(value[value.index(after: at)...])
        if let plus = local.firstIndex(of: "+"), plus > local.startIndex { local = local[..<plus] }
        if domain == "gmail.com" || domain == "googlemail.com" {
            domain = "gmail.com"
            return local.filter { $0 != "." } + "@" + domain
        }
        return local + "@" + domain
    }

    /// The part after `@`.
    public var domain: String { String(value[value.index(after: value.lastIndex(of: "@")!)...]) }

    /// True for Apple private-relay addresses (Sign in with Apple's "Hide My Email").
    public var isPrivateRelay: Bool { domain == Self.privateRelayDomain || domain.hasSuffix("." + Self.privateRelayDomain) }

    /// `a***@example.com`: enough for an operator to tell messages apart, not enough to harvest addresses.
    public var masked: String {
        let local = value[..<value.lastIndex(of: "@")!]
        return String(local.prefix(1)) + "***@" + domain
    }

    public var description: String { value }
}
