import Foundation
import HeraldRuntime
import HeraldTesting
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The health and metrics listener every process runs, in process on a free port.
@Suite("Health and metrics listener")
struct HealthServerTests {
    /// What `isReady` reads, changed by the test.
    final class Readiness: Sendable {
        private let value: Atomic<Bool>
        init(_ ready: Bool) { value = Atomic(ready) }
        var isReady: Bool { value.load(ordering: .relaxed) }
        func set(_ ready: Bool) { value.store(ready, ordering: .relaxed) }
    }

    /// Runs a listener with `idleTimeout`, readiness from `ready`, until `body` returns.
    /// The listener runs on an event loop of its own, so other tests' servers on NIO's shared loops
    /// cannot hold up its timers or its bind.
    static func withServer(
        idleTimeout: Duration = .seconds(30), maxConnections: Int = 64, ready: Readiness, _ body: (Int) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let port = Mutex<Int?>(nil)
        let server = HealthServer(
            host: "127.0.0.1", port: 0, idleTimeout: idleTimeout, maxConnections: maxConnections, isReady: { ready.isReady },
            onListening: { bound in port.withLock { $0 = bound } }, group: group)
        let ended = Mutex(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            try await server.run()
        }
        defer { task.cancel() }
        // Until bound, or until run() has ended (then with its error).
        _ = await eventually(timeout: .seconds(60)) { port.withLock { $0 } != nil || ended.withLock { $0 } }
        guard let listening = port.withLock({ $0 }) else {
            task.cancel()
            Issue.record("the listener did not start: \(await task.result)")
            try await group.shutdownGracefully()
            return
        }
        try await body(listening)
        task.cancel()
        try await task.value
        try await group.shutdownGracefully()
    }

    @Test("/healthz, /readyz as readiness changes, /metrics in Prometheus text; other paths 404, other methods 405, HEAD without a body")
    func answers() async throws {
        let ready = Readiness(false)
        try await Self.withServer(ready: ready) { port in
            let client = HeraldClient(port: port)
            let health = try await client.get("/healthz")
            #expect(health.status == 200)
            #expect(String(decoding: health.body, as: UTF8.self) == "ok\n")
            #expect(try await client.get("/readyz").status == 503)
            ready.set(true)
            let readiness = try await client.get("/readyz?verbose=1")
            #expect(readiness.status == 200)
            #expect(String(decoding: readiness.body, as: UTF8.self) == "ready\n")
            HeraldMetrics.bootstrap()
            let metrics = try await client.get("/metrics")
            #expect(metrics.status == 200)
            #expect(String(decoding: metrics.body, as: UTF8.self).contains("# TYPE herald_build_info gauge"))
            #expect(try await client.get("/").status == 404)
            #expect(try await client.post("/healthz", json: [:]).status == 405)

            let head = try RawConnection(port: port)
            try head.send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(await head.waitForClose(within: .seconds(10)))
            #expect(head.received.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(head.received.hasSuffix("\r\n\r\n"), "a HEAD answer carries no body: \(head.received)")
        }
    }

    @Test("two requests on one keep-alive connection are both answered; then an idle connection and a head trickled a byte at a time are closed")
    func closesIdleAndSlowConnections() async throws {
        try await Self.withServer(idleTimeout: .seconds(1), ready: Readiness(true)) { port in
            let keepAlive = try RawConnection(port: port)
            try keepAlive.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await keepAlive.waitForClose(within: .seconds(15)), "an idle keep-alive connection stayed open")
            #expect(keepAlive.received.components(separatedBy: "HTTP/1.1 200 OK").count == 3, "\(keepAlive.received)")
            #expect(keepAlive.received.hasSuffix("ready\n"))

            let trickle = try RawConnection(port: port)
            var closed = false
            for byte in "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" where closed == false {
                closed = (try? trickle.send(String(byte))) == nil || trickle.isClosed
                if closed == false { closed = await trickle.waitForClose(within: .milliseconds(300)) }
            }
            #expect(closed, "a head trickled for longer than the idle timeout kept its connection open")
            #expect(trickle.received.isEmpty, "\(trickle.received)")
        }
    }

    @Test("a body trickled a byte at a time is cut off at the deadline, unanswered")
    func closesTrickledBody() async throws {
        try await Self.withServer(idleTimeout: .seconds(1), ready: Readiness(true)) { port in
            let trickle = try RawConnection(port: port)
            try trickle.send("POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60\r\n\r\n")
            var closed = false
            for _ in 0..<60 where closed == false {
                closed = (try? trickle.send("a")) == nil || trickle.isClosed
                if closed == false { closed = await trickle.waitForClose(within: .milliseconds(300)) }
            }
            #expect(closed, "a body trickled for longer than the idle timeout kept its connection open")
            #expect(trickle.received.isEmpty, "\(trickle.received)")
        }
    }

    @Test("at maxConnections the listener accepts no more until one closes; the waiting client is then answered")
    func capsOpenConnections() async throws {
        try await Self.withServer(maxConnections: 16, ready: Readiness(true)) { port in
            var open: [RawConnection] = []
            for _ in 0..<16 {
                let connection = try RawConnection(port: port)
                try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                #expect(await connection.waitForData(within: .seconds(10)))
                open.append(connection)
            }
            // Connected (the kernel's backlog holds it) but not accepted: no answer while 16 are open.
            let waiting = try RawConnection(port: port)
            try waiting.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await waiting.waitForData(within: .milliseconds(800)) == false, "\(waiting.received)")
            open.removeFirst().hangUp()
            #expect(await waiting.waitForData(within: .seconds(10)))
            #expect(waiting.received.hasPrefix("HTTP/1.1 200 OK"), "\(waiting.received)")
            for connection in open { connection.hangUp() }
        }
    }
}
