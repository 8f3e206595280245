import Foundation

/// An IPv4 or IPv6 address as 16 bytes (IPv4 mapped into `::ffff:0:0/96`), parsed without the network
/// stack, for client keys and trusted-proxy checks.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// True for IPv4 (and IPv4-mapped IPv6) addresses.
    public var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    /// True for 127.0.0.0/8 and ::1.
    public var isLoopback: Bool {
        isIPv4 ? bytes[12] == 127 : bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
    }

    /// True when a host name names this machine: `localhost`, 127.0.0.0/8, `::1` or `[::1]`.
    public static func isLoopback(host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" { return true }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return IPAddress(bare)?.isLoopback == true
    }

    public init?(_ text: String) {
        let trimmed = text.trimmingWhitespace
        if let v4 = Self.parseIPv4(Substring(trimmed)) {
            bytes = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + v4
        } else if let v6 = Self.parseIPv6(trimmed) {
            bytes = v6
        } else {
            return nil
        }
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// An IPv4 address from its four bytes (a socket's peer), in the IPv4-mapped form.
    public init(ipv4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        self.bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d]
    }

    /// An IPv6 address from its 16 bytes (a socket's peer); nil for any other count.
    public init?(ipv6 bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Four dot-separated decimal parts of one to three ASCII digits, each at most 255. By bytes: every
    /// request parses its peer's address, and splitting into Substrings and asking Character about
    /// digits was a visible share of a send.
    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(4)
        var value = 0
        var digits = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, out.count < 3 else { return nil }
                out.append(UInt8(value))
                (value, digits) = (0, 0)
            } else {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 3 else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return nil }
            }
        }
        guard digits > 0, out.count == 3 else { return nil }
        out.append(UInt8(value))
        return out
    }

    static func parseIPv6(_ text: String) -> [UInt8]? {
        var text = Substring(text)
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }  // zone id
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            guard part.isEmpty == false else { return [] }
            var out: [UInt8] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, field) in fields.enumerated() {
                if index == fields.count - 1, field.contains(".") {
                    guard let v4 = parseIPv4(field) else { return nil }
                    out += v4
                    continue
                }
                guard (1...4).contains(field.count), let value = UInt16(field, radix: 16) else { return nil }
                out += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return out
        }
        if halves.count == 1 {
            guard let all = groups(halves[0]), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(halves[0]), let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }

    /// The address with all bits after the first `bits` cleared (bits counted on the 128-bit form).
    public func masked(to bits: Int) -> IPAddress {
        IPAddress(
            bytes: bytes.enumerated().map { index, byte in
                let keep = max(0, min(8, bits - index * 8))
                return keep == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
            })
    }

    public var description: String {
        if isIPv4 { return Self.dotted(bytes[12...]) }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    /// Dotted decimal written digit by digit (every send names its client's address twice).
    static func dotted(_ parts: ArraySlice<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 15) { out in
            var position = 0
            for (index, part) in parts.enumerated() {
                if index > 0 {
                    out[position] = UInt8(ascii: ".")
                    position += 1
                }
                if part >= 100 {
                    out[position] = UInt8(ascii: "0") + part / 100
                    position += 1
                }
                if part >= 10 {
                    out[position] = UInt8(ascii: "0") + part / 10 % 10
                    position += 1
                }
                out[position] = UInt8(ascii: "0") + part % 10
                position += 1
            }
            return position
        }
    }

    /// The key a client is limited under: IPv4 addresses alone, IPv6 by /64 (one subscriber's block).
    public var limitKey: String {
        isIPv4 ? description : masked(to: 64).description + "/64"
    }
}

/// An address or a CIDR block (`10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1`).
public struct IPNetwork: Sendable, Hashable {
    public let address: IPAddress
    /// Prefix length on the 128-bit form.
    public let bits: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let address = IPAddress(parts[0]) else { return nil }
        let maximum = address.isIPv4 ? 32 : 128
        var length = maximum
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...maximum).contains(value) else { return nil }
            length = value
        }
        self.bits = address.isIPv4 ? 96 + length : length
        self.address = address.masked(to: bits)
    }

    public func contains(_ candidate: IPAddress) -> Bool {
        candidate.masked(to: bits) == address
    }
}

/// Which client a request counts against: the peer, or — when the peer is a trusted proxy — the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy. A client cannot dodge its
/// limit by sending its own `X-Forwarded-For` unless it is (or comes through) a trusted proxy.
public enum ClientAddress: Sendable, Equatable, CustomStringConvertible {
    /// An address the request came from.
    case address(IPAddress)
    /// A hop a trusted proxy wrote that is not an address in any form Herald reads. It is that proxy's
    /// word for the client, so the request counts against that text, never against the proxy itself
    /// (which would put every client behind it in one bucket).
    case unparsed(String)

    /// The key the per-IP limits count under.
    public var limitKey: String {
        switch self {
        case .address(let address): address.limitKey
        case .unparsed(let text): "hop:" + String(decoding: text.utf8.prefix(Self.maximumHopLength), as: UTF8.self)
        }
    }

    /// The address, when there is one (what a captcha check is told).
    public var address: IPAddress? {
        if case .address(let address) = self { address } else { nil }
    }

    public var description: String {
        switch self {
        case .address(let address): address.description
        case .unparsed(let text): "unparsed hop " + LogText.escaped(String(decoding: text.utf8.prefix(Self.maximumHopLength), as: UTF8.self))
        }
    }

    /// The longest hop text kept: longer than any address with a port and a zone.
    static let maximumHopLength = 64

    public static func resolve(peer: IPAddress?, forwardedFor: String?, trustedProxies: [IPNetwork]) -> ClientAddress? {
        guard let peer else { return nil }
        guard trustedProxies.contains(where: { $0.contains(peer) }), let forwardedFor else { return .address(peer) }
        let hops = forwardedFor.split(separator: ",").map(\.trimmingWhitespace)
        // An empty hop (`a, , b`) says nothing about anyone: skipped, never a reason to fall back to the proxy.
        for hop in hops.reversed() where hop.isEmpty == false {
            guard let address = hopAddress(hop) else { return .unparsed(hop) }
            if trustedProxies.contains(where: { $0.contains(address) }) == false { return .address(address) }
        }
        return hops.first.flatMap(hopAddress).map(ClientAddress.address) ?? .address(peer)
    }

    /// One `X-Forwarded-For` hop: an address, or one with a port as proxies write them (`203.0.113.7:4711`,
    /// Azure Application Gateway's form; `[2001:db8::1]:4711`; `[2001:db8::1]`).
    static func hopAddress(_ hop: String) -> IPAddress? {
        if let address = IPAddress(hop) { return address }
        if hop.hasPrefix("["), let close = hop.firstIndex(of: "]") {
            let rest = hop[hop.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") && isPort(rest.dropFirst()) else { return nil }
            return IPAddress(String(hop[hop.index(after: hop.startIndex)..<close]))
        }
        let parts = hop.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, isPort(parts[1]), let address = IPAddress(String(parts[0])), address.isIPv4 else { return nil }
        return address
    }

    static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
