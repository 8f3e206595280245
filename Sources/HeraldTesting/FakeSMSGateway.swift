import Foundation
import HeraldRuntime
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A fake SMS provider speaking plain HTTP on 127.0.0.1: records every request on arrival (so a send
/// that reached it counts even if the worker died before the answer) and answers from a script.
public final class FakeSMSGateway: Sendable {
    /// One request as received.
    public struct Received: Sendable {
        public var arrivedAt: Date
        /// The request target: path and query.
        public var uri: String = "/sms"
        /// As received; `headers` builds the lookup only when a test asks.
        let rawHeaders: HTTPHeaders
        public var body: Data
        /// Header names lower-cased.
        public var headers: [String: String] {
            Dictionary(rawHeaders.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        }
        /// The body as a JSON object of strings, when it is one (the default gateway template).
        public var json: [String: String]? {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: String]
        }
        public var to: String? { json?["to"] }
        public var text: String? { json?["body"] }
        public var reference: String? { json?["reference"] }
    }

    /// An answer to give.
    public struct Reply: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: String
        /// How long to wait before answering.
        public var delay: Duration

        public init(status: Int, headers: [String: String] = [:], body: String = "{}", delay: Duration = .zero) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
        }

        public static let ok = Reply(status: 200, body: #"{"status":"queued"}"#)
    }

    struct State {
        var received: [Received] = []
        var script: [Reply] = []
        var fallback: Reply = .ok
        var inFlight = 0
        var maxInFlight = 0
        /// While true, requests wait before answering (`hold()` / `release()`).
        var held = false
        /// Answers in place of the script (a provider's own wire format, `FakeSMSProvider`); nil: the script.
        var responder: (@Sendable (Received) -> Reply)?
    }

    final class StateBox: Sendable {
        let state = Mutex(State())
        /// Closed by `stop()`, as a stopped provider would drop them.
        let connections = OpenConnections()
    }

    let stateBox: StateBox
    let listener: any Channel
    let port: Int

    /// `http://127.0.0.1:<port>/sms`.
    public var url: String { "http://127.0.0.1:\(port)/sms" }

    /// Starts a gateway that answers 200 unless scripted otherwise.
    ///
    /// Plain NIO HTTP/1.1 that answers on the connection's event loop, not a web framework: in the
    /// benchmarks this fake shares two cores with the broker, the store and the worker it measures, and
    /// through Hummingbird it cost about 53 µs of CPU per SMS, as much as PostgreSQL's share of a job.
    public static func start() async throws -> FakeSMSGateway {
        let box = StateBox()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                box.connections.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(GatewayHandler(box: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = listener.localAddress?.port else { throw TestFailure("fake gateway has no port") }
        return FakeSMSGateway(stateBox: box, listener: listener, port: port)
    }

    init(stateBox: StateBox, listener: any Channel, port: Int) {
        self.stateBox = stateBox
        self.listener = listener
        self.port = port
    }

    /// Everything received so far, in arrival order.
    public var received: [Received] { stateBox.state.withLock { $0.received } }

    /// The most requests that were being answered at the same time.
    public var maxInFlight: Int { stateBox.state.withLock { $0.maxInFlight } }

    /// Replies for the next requests, in order; afterwards `fallback` applies.
    public func script(_ replies: [Reply]) { stateBox.state.withLock { $0.script.append(contentsOf: replies) } }

    /// The reply once the script is used up.
    public func setFallback(_ reply: Reply) { stateBox.state.withLock { $0.fallback = reply } }

    /// Requests wait unanswered until `release()`: jobs stay in flight as long as a test needs.
    public func hold() { stateBox.state.withLock { $0.held = true } }

    public func release() { stateBox.state.withLock { $0.held = false } }

    /// Every request to any path is answered by `responder` (the script is not used).
    public func respond(with responder: @escaping @Sendable (Received) -> Reply) { stateBox.state.withLock { $0.responder = responder } }

    /// Requests received so far (cheaper than `received.count` while a benchmark polls).
    public var receivedCount: Int { stateBox.state.withLock { $0.received.count } }

    public func stop() async {
        release()
        try? await listener.close()
        for channel in stateBox.connections.all() { try? await channel.close() }
    }
}

/// Reads one request at a time (NIO's pipeline handler holds back pipelined ones), records it on
/// arrival, and answers from the script, after the reply's delay and while the gateway is held.
private final class GatewayHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maxBody = 1 << 20
    let box: FakeSMSGateway.StateBox
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var tooLarge = false

    init(box: FakeSMSGateway.StateBox) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
            tooLarge = false
        case .body(var chunk):
            tooLarge = tooLarge || body.readableBytes + chunk.readableBytes > Self.maxBody
            if tooLarge == false { body.writeBuffer(&chunk) }
        case .end:
            guard let head else { return }
            self.head = nil
            let custom = box.state.withLock { $0.responder != nil }
            guard custom || (head.method == .POST && head.uri.prefix(while: { $0 != "?" }) == "/sms") else {
                return Self.write(FakeSMSGateway.Reply(status: 404, body: ""), keepAlive: head.isKeepAlive, to: context.channel)
            }
            guard tooLarge == false else {
                return Self.write(FakeSMSGateway.Reply(status: 413, body: ""), keepAlive: false, to: context.channel)
            }
            let received = FakeSMSGateway.Received(arrivedAt: Date(), uri: head.uri, rawHeaders: head.headers, body: Data(body.readableBytesView))
            let (reply, responder) = box.state.withLock {
                state -> (FakeSMSGateway.Reply, (@Sendable (FakeSMSGateway.Received) -> FakeSMSGateway.Reply)?) in
                state.received.append(received)
                state.inFlight += 1
                state.maxInFlight = max(state.maxInFlight, state.inFlight)
                if let responder = state.responder { return (.ok, responder) }
                return (state.script.isEmpty ? state.fallback : state.script.removeFirst(), nil)
            }
            let answer = responder?(received) ?? reply
            let (channel, box, keepAlive) = (context.channel, box, head.isKeepAlive)
            let respond: @Sendable () -> Void = {
                box.state.withLock { $0.inFlight -= 1 }
                Self.write(answer, keepAlive: keepAlive, to: channel)
            }
            if answer.delay > .zero {
                context.eventLoop.scheduleTask(in: TimeAmount(answer.delay)) { Self.whenReleased(box, on: channel.eventLoop, respond) }
            } else {
                Self.whenReleased(box, on: context.eventLoop, respond)
            }
        }
    }

    /// Runs `answer` now, or once `release()` is called (checked every 20 ms, as a test's hold is rare).
    private static func whenReleased(_ box: FakeSMSGateway.StateBox, on loop: any EventLoop, _ answer: @escaping @Sendable () -> Void) {
        if box.state.withLock({ $0.held }) {
            loop.scheduleTask(in: .milliseconds(20)) { whenReleased(box, on: loop, answer) }
        } else {
            answer()
        }
    }

    private static func write(_ reply: FakeSMSGateway.Reply, keepAlive: Bool, to channel: any Channel) {
        let body = channel.allocator.buffer(string: reply.body)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        for (name, value) in reply.headers { headers.replaceOrAdd(name: name, value: value) }
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if keepAlive == false { headers.add(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: reply.status)
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil)
        let written = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if keepAlive == false { written.whenComplete { _ in channel.close(promise: nil) } }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
