import Foundation
import HeraldTesting
import Testing

/// Against a real herald-api process: the idle and body deadlines run on its own event loops, so a
/// test process busy with other tests cannot delay them (in-process, this test failed whenever the
/// suite's parallel tests kept Swift's two cooperative threads busy).
@Suite("Slow clients against a real herald-api")
struct SlowClientTests {
    @Test("slowloris: a head that never completes and an idle keep-alive connection are closed; a trickled body is cut off")
    func idleConnectionsClosed() async throws {
        try await StackHarness.run(configure: { $0.idleTimeout = "1s" }) { stack in
            try await stack.startAPI()
            let port = stack.settings.apiPort
            // Half a request head, then nothing: the server must hang up by itself.
            let slow = try RawConnection(port: port)
            try slow.send("POST /v1/accounts:sendVerificationCode?key=\(TestConfiguration.apiKey) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
            #expect(await slow.waitForClose(within: .seconds(15)))
            // A complete request on a keep-alive connection, answered, then idle.
            let idle = try RawConnection(port: port)
            try idle.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await idle.waitForClose(within: .seconds(15)))
            #expect(idle.received.hasPrefix("HTTP/1.1 200"))
            // A body trickled a byte at a time keeps the connection busy, but not the request open.
            let trickle = try RawConnection(port: port)
            try trickle.send(
                "POST /v1/accounts:sendVerificationCode?key=\(TestConfiguration.apiKey) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100\r\n\r\n{")
            var answered = false
            var closed = false
            for _ in 0..<40 where answered == false && closed == false {
                closed = (try? trickle.send(" ")) == nil
                answered = await trickle.waitForData(within: .milliseconds(400))
                closed = closed || trickle.isClosed
            }
            #expect(answered == false)
            #expect(closed, "a trickled body kept its connection open")
            #expect(trickle.received.isEmpty, "\(trickle.received)")
        }
    }

    /// A request head announcing a 100-byte body, then one byte of it.
    static func trickleHead(_ method: String, _ path: String, extra: String = "") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\(extra)Content-Length: 100\r\n\r\na"
    }

    /// Sends `head`, then a byte every 200 ms until the server answers or hangs up (at most 80 bytes,
    /// 16 s: far past a 1 s deadline, and short of the announced length).
    static func trickle(_ head: String, port: Int) async throws -> (connection: RawConnection, closed: Bool) {
        let connection = try RawConnection(port: port)
        try connection.send(head)
        var closed = false
        for _ in 0..<80 where closed == false {
            closed = (try? connection.send("a")) == nil || connection.isClosed
            if closed == false { closed = await connection.waitForClose(within: .milliseconds(200)) }
        }
        return (connection, closed)
    }

    @Test(
        "every route's body has the same deadline: one that reads it closes unanswered, one that does not answers with Connection: close and hangs up"
    )
    func everyBodyHasADeadline() async throws {
        try await StackHarness.run(configure: {
            $0.idleTimeout = "1s"
            $0.callbackSecret = Data(repeating: 7, count: 32).base64EncodedString()
        }) { stack in
            try await stack.startAPI()
            let port = stack.settings.apiPort
            // Routes that read the body: nothing is answered, the connection is closed at the deadline.
            for path in ["/admin/login", "/callbacks/sms/http"] {
                let (connection, closed) = try await Self.trickle(Self.trickleHead("POST", path), port: port)
                #expect(closed, "a trickled body to \(path) kept its connection open")
                #expect(connection.received.isEmpty, "\(path): \(connection.received)")
            }
            // Routes that answer without the body: the answer comes at once, says Connection: close, and
            // the connection ends although the body never does.
            let unread: [(method: String, path: String, status: String)] = [
                ("POST", "/no/such/route", "404"), ("POST", "/admin/blocks/lift", "401"), ("GET", "/healthz", "200"),
            ]
            for request in unread {
                let (connection, closed) = try await Self.trickle(Self.trickleHead(request.method, request.path), port: port)
                #expect(closed, "\(request.method) \(request.path) with a trickled body kept its connection open")
                #expect(connection.received.hasPrefix("HTTP/1.1 \(request.status)"), "\(request.path): \(connection.received)")
                #expect(connection.received.lowercased().contains("\r\nconnection: close\r\n"), "\(request.path): \(connection.received)")
            }
            // A body sent whole to a route that ignores it leaves the connection usable.
            let whole = try RawConnection(port: port)
            try whole.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabcGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await whole.waitForClose(within: .seconds(15)))
            #expect(whole.received.components(separatedBy: "HTTP/1.1 200").count == 3, "\(whole.received)")
            #expect(whole.received.lowercased().contains("connection: close") == false, "\(whole.received)")
        }
    }

    @Test("http.maxConnections: at the cap herald-api accepts no more connections until one closes")
    func capsOpenConnections() async throws {
        try await StackHarness.run(configure: { $0.maxConnections = 16 }) { stack in
            try await stack.startAPI()
            let port = stack.settings.apiPort
            // The harness's own client may hold a connection or two: open them one at a time until one is
            // connected (the kernel's backlog holds it) but not accepted, answered by nobody.
            var open: [RawConnection] = []
            var waiting: RawConnection?
            while waiting == nil, open.count < 20 {
                let connection = try RawConnection(port: port)
                try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                if await connection.waitForData(within: .seconds(2)) {
                    open.append(connection)
                } else {
                    waiting = connection
                }
            }
            #expect((12...16).contains(open.count), "\(open.count) connections were accepted under a cap of 16")
            guard let waiting else { return }
            #expect(waiting.received.isEmpty, "\(waiting.received)")
            open.removeFirst().hangUp()
            #expect(await waiting.waitForData(within: .seconds(10)))
            #expect(waiting.received.hasPrefix("HTTP/1.1 200"), "\(waiting.received)")
            for connection in open { connection.hangUp() }
        }
    }
}
