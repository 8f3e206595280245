import Hummingbird
import NIOCore

/// The request context of herald-api: Hummingbird's core plus the peer address, which per-IP limits
/// need (and which `X-Forwarded-For` may replace only behind a trusted proxy).
public struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}
