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
}
