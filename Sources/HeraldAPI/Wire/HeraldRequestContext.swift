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
