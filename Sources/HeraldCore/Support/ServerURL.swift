/// A server address written as a URL, `scheme://user:password@host:port/path?name=value`, as the
/// `amqp.url` and `store.url` settings take it (RFC 3986 syntax; user, password, path and query
/// values percent-encoded).
///
/// Parsed here rather than by Foundation's `URLComponents`, whose `host` runs IDNA through ICU: that
/// mapped several MiB of ICU code and data into every worker for a host name it hands to
/// `getaddrinfo` unchanged anyway.
public struct ServerURL: Sendable {
    /// Lower-cased scheme, without `://`.
    public var scheme: String
    /// Percent-decoded; nil when the URL has no user information.
    public var user: String?
    /// Percent-decoded; nil when the user information has no `:`.
    public var password: String?
    /// Without the brackets of an IPv6 literal.
    public var host: String
    public var port: Int?
    /// Still percent-encoded, with its leading `/` (empty when the URL has no path).
    public var percentEncodedPath: String
    /// Query items in order, names and values percent-decoded; value nil for a bare `name`.
    public var queryItems: [(name: String, value: String?)]

    /// Parses `text`; nil when it is not `scheme://host…` or a part is malformed (a character a URL
    /// may not carry, a bad percent escape, a port that is not a number up to 65535).
    public init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else { return nil }
        let scheme = text[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        var rest = text[colon...].dropFirst(3)
        guard rest.utf8.allSatisfy(Self.isURLByte) else { return nil }
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        self.percentEncodedPath = String(rest[authorityEnd...])
        self.scheme = scheme.lowercased()

        self.user = nil
        self.password = nil
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                guard let user = Self.percentDecoded(userInfo[..<colon]),
                    let password = Self.percentDecoded(userInfo[userInfo.index(after: colon)...])
                else { return nil }
                self.user = user
                self.password = password
            } else {
                guard let user = Self.percentDecoded(userInfo) else { return nil }
                self.user = user
            }
        }

        let hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.isEmpty == false {
                guard after.hasPrefix(":") else { return nil }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        } else {
            hostPart = authority
        }
        guard hostPart.isEmpty == false, let host = Self.percentDecoded(hostPart) else { return nil }
        self.host = host
        self.port = nil
        if let portPart, portPart.isEmpty == false {
            guard portPart.utf8.count <= 5, portPart.allSatisfy(\.isWholeNumber), let port = Int(portPart), port <= 65535
            else { return nil }
            self.port = port
        }

        var items: [(name: String, value: String?)] = []
        for pair in query?.split(separator: "&", omittingEmptySubsequences: true) ?? [] {
            if let equals = pair.firstIndex(of: "=") {
                guard let name = Self.percentDecoded(pair[..<equals]),
                    let value = Self.percentDecoded(pair[pair.index(after: equals)...])
                else { return nil }
                items.append((name, value))
            } else {
                guard let name = Self.percentDecoded(pair) else { return nil }
                items.append((name, nil))
            }
        }
        self.queryItems = items
    }

    /// `%XX` escapes decoded; nil for a malformed escape or bytes that are not UTF-8.
    public static func percentDecoded(_ text: Substring) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(HexDigits.value), let low = iterator.next().flatMap(HexDigits.value) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The bytes RFC 3986 lets a URL carry unescaped: unreserved, reserved and `%`.
    private static func isURLByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~:/?#[]@!$&'()*+,;=%".utf8.contains(byte)
        }
    }
}
