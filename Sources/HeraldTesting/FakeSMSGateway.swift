import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A fake SMS provider speaking plain HTTP on 127.0.0.1: records every request on arrival (so a send
/// that reached it counts even if the worker died before the answer) and answers from a script.
public final class FakeSMSGateway: Sendable {
    /// One request as received.
    public struct Received: Sendable {
        public var arrivedAt: Date
        /// Header names lower-cased.
        public var headers: [String: String]
        public var body: Data
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
    }

    final class StateBox: Sendable {
        let state = Mutex(State())
    }

    let stateBox: StateBox
    let server: BackgroundServer

    /// `http://127.0.0.1:<port>/sms`.
    public var url: String { "http://127.0.0.1:\(server.port)/sms" }

    /// Starts a gateway that answers 200 unless scripted otherwise.
    public static func start() async throws -> FakeSMSGateway {
        let box = StateBox()
        let router = Router()
        router.post("/sms") { request, context -> Response in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let received = Received(arrivedAt: Date(), headers: headers, body: Data(buffer.readableBytesView))
            let reply = box.state.withLock { state -> Reply in
                state.received.append(received)
                state.inFlight += 1
                state.maxInFlight = max(state.maxInFlight, state.inFlight)
                return state.script.isEmpty ? state.fallback : state.script.removeFirst()
            }
            defer { box.state.withLock { $0.inFlight -= 1 } }
            if reply.delay > .zero { try await Task.sleep(for: reply.delay) }
            while box.state.withLock({ $0.held }) { try await Task.sleep(for: .milliseconds(20)) }
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            for (name, value) in reply.headers {
                if let field = HTTPField.Name(name) { fields[field] = value }
            }
            return Response(
                status: .init(code: reply.status), headers: fields,
                body: .init(byteBuffer: ByteBuffer(string: reply.body)))
        }
        let server = try await BackgroundServer.start(router: router)
        return FakeSMSGateway(stateBox: box, server: server)
    }

    init(stateBox: StateBox, server: BackgroundServer) {
        self.stateBox = stateBox
        self.server = server
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

    public func stop() async {
        release()
        await server.stop()
    }
}
