import HeraldCore
import Hummingbird
import NIOCore

/// The request context of herald-api: Hummingbird's core plus the peer address, which per-IP limits
/// need (and which `X-Forwarded-For` may replace only behind a trusted proxy), and the connection, so a
/// request that takes too long to arrive can be cut off.
public struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }
}

extension IPAddress {
    /// The peer's address from the socket address's bytes: NIO's `ipAddress` formats it as text
    /// (`inet_ntop`) on every call, which the limits then parsed back. The address sits at a fixed
    /// offset after the 2-byte family and 2-byte port: byte 4 of `sockaddr_in`, and byte 8 of
    /// `sockaddr_in6` (after its 4-byte flow label).
    init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4):
            let bytes = withUnsafeBytes(of: v4.address) { Array($0[4..<8]) }
            self.init(ipv4: bytes[0], bytes[1], bytes[2], bytes[3])
        case .v6(let v6):
            self.init(ipv6: withUnsafeBytes(of: v6.address) { Array($0[8..<24]) })
        case .unixDomainSocket:
            return nil
        }
    }
}
