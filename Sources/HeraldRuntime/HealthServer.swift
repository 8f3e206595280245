import ArgumentParser
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// `/healthz`, `/readyz` and `/metrics` for a worker process, and herald-api's metrics listener (kept off
/// the public port).
///
/// `/healthz` answers while the process runs; `/readyz` answers 200 only while `isReady()` holds
/// (the broker consumer is connected and the store opened), 503 otherwise, so orchestrators stop
/// routing to and restarting at the right moments.
///
/// Plain NIO HTTP/1.1 rather than a web framework: three fixed answers need no router, and workers
/// then link no framework at all. (Hummingbird here cost every worker about 4 MiB of resident memory:
/// its Date-header cache opens the time zone through ICU at start.)
public struct HealthServer: Service {
    let host: String
    let port: Int
    let idleTimeout: Duration
    let maxConnections: Int
    let isReady: @Sendable () -> Bool
    let onListening: @Sendable (Int) -> Void
    let group: any EventLoopGroup

    /// `group`: NIO's shared loops in the processes; tests give the listener loops of its own.
    public init(
        host: String, port: Int, idleTimeout: Duration, maxConnections: Int, isReady: @escaping @Sendable () -> Bool,
        onListening: @escaping @Sendable (Int) -> Void = { _ in }, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.host = host
        self.port = port
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.isReady = isReady
        self.onListening = onListening
        self.group = group
    }

    /// The answer to one request head.
    static func answer(method: HTTPMethod, path: String, isReady: () -> Bool) -> (status: HTTPResponseStatus, contentType: String, body: String) {
        let plain = "text/plain; charset=utf-8"
        guard method == .GET || method == .HEAD else { return (.methodNotAllowed, plain, "method not allowed\n") }
        switch path.prefix(while: { $0 != "?" }) {
        case "/healthz": return (.ok, plain, "ok\n")
        case "/readyz": return isReady() ? (.ok, plain, "ready\n") : (.serviceUnavailable, plain, "not ready\n")
        case "/metrics": return (.ok, "text/plain; version=0.0.4", HeraldMetrics.exposition())
        default: return (.notFound, plain, "not found\n")
        }
    }

    /// Binds at once, then serves when run; the whole listener as one service.
    public func run() async throws {
        try await bind().run()
    }

    /// The listener's address is taken (another process, or another instance of this one, holds it).
    public struct AddressInUse: Error, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var description: String { "\(host):\(port) is in use" }
    }

    /// Binds the listener now, so a process learns that its port is taken before it connects to
    /// anything or takes work; the answer serves once run. Throws `AddressInUse` for a taken port.
    public func bind() async throws -> Listening {
        let connections = OpenConnections()
        let (isReady, deadline, maxConnections) = (self.isReady, TimeAmount(idleTimeout), self.maxConnections)
        let server: any Channel
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ConnectionCap(limit: maxConnections)) }
                }
                .childChannelInitializer { channel in
                    connections.add(channel)
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(HealthHandler(isReady: isReady, deadline: deadline))
                    }
                }
                .bind(host: host, port: port).get()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw AddressInUse(host: host, port: port)
        }
        let bound = server.localAddress?.port ?? port
        onListening(bound)
        return Listening(server: server, connections: connections, port: bound)
    }

    /// `bind()`, or, when the port is taken, one line naming `key`, the address and how to give each
    /// instance its own port, then exit 78 (a configuration error: the same file cannot run twice on
    /// one host without a port of its own).
    public func bindOrExit(key: String) async throws -> Listening {
        do {
            return try await bind()
        } catch let taken as AddressInUse {
            let variable = "HERALD_" + key.split(separator: ".").map { ConfigReader.upperSnake(String($0)) }.joined(separator: "_")
            LineOutput.installProcessWide()
            LineOutput.standardError.write("herald: \(key) \(taken); give each instance its own, e.g. \(variable)=\(taken.port + 10)")
            throw ExitCode(78)
        }
    }

    /// A bound listener: serves until graceful shutdown or cancellation, then closes it and every open
    /// connection.
    public struct Listening: Service {
        let server: any Channel
        let connections: OpenConnections
        /// The port it listens on (the chosen one when configured as 0).
        public let port: Int

        public func run() async throws {
            // Until SIGTERM (the worker drains first) or cancellation: then no new connection, and the
            // open keep-alive ones are closed.
            try? await gracefulShutdown()
            try? await server.close()
            for channel in connections.all() { channel.close(promise: nil) }
        }
    }
}

/// Child channels still open, to close them at shutdown (a NIO server's own listener closes only itself).
public final class OpenConnections: Sendable {
    private let channels = Mutex([ObjectIdentifier: any Channel]())

    public init() {}

    /// Tracks `channel` until it closes.
    public func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { _ in _ = self.channels.withLock { $0.removeValue(forKey: id) } }
    }

    public func all() -> [any Channel] { channels.withLock { Array($0.values) } }
}

/// Answers each request once its end arrives (a body, if any, is read and dropped). A connection must
/// bring a whole request within `deadline` of opening or of its last answer, or it is closed: that
/// ends idle keep-alive connections and heads trickled a byte at a time alike.
private final class HealthHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let isReady: @Sendable () -> Bool
    let deadline: TimeAmount
    private var head: HTTPRequestHead?
    private var timer: Scheduled<Void>?

    init(isReady: @escaping @Sendable () -> Bool, deadline: TimeAmount) {
        self.isReady = isReady
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            timer?.cancel()
            timer = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let answer = HealthServer.answer(method: head.method, path: head.uri, isReady: isReady)
        let body = context.channel.allocator.buffer(string: answer.body)
        let keepAlive = head.isKeepAlive
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: answer.contentType)
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if keepAlive == false { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: answer.status, headers: headers))), promise: nil)
        if head.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        let channel = context.channel
        if keepAlive {
            arm(context)
        } else {
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
