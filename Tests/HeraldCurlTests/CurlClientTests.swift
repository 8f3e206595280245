import Foundation
import HeraldTesting
import Testing

@testable import HeraldCurl

@Suite("libcurl HTTP client against a real HTTP server")
struct CurlClientTests {
    let client = CurlClient(logger: quietLogger())

    @Test("POSTs a JSON body with headers and reads status, headers and body")
    func postJSON() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        let response = try await client.perform(
            CurlHTTPRequest(
                url: gateway.url, headers: [("Content-Type", "application/json"), ("Authorization", "Bearer k")],
                body: Data(#"{"to":"+15555550100","body":"hi","reference":"r1"}"#.utf8)))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains("queued"))
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.httpVersion == 11)
        let received = try #require(gateway.received.first)
        #expect(received.to == "+15555550100")
        #expect(received.headers["authorization"] == "Bearer k")
        #expect(received.headers["expect"] == nil)
    }

    @Test("a handle reused for the next transfer carries none of the last one's headers, body or answer")
    func reusedHandleStartsClean() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        gateway.script([.init(status: 429, headers: ["Retry-After": "7", "X-Only-First": "1"], body: #"{"first":"yes"}"#)])
        let first = try await client.perform(
            CurlHTTPRequest(url: gateway.url, headers: [("Authorization", "Bearer first")], body: Data(#"{"to":"+15555550100"}"#.utf8)))
        #expect(first.status == 429)
        #expect(first.retryAfter == .seconds(7))
        // One transfer at a time: the second runs on the first's reset handle and pooled connection.
        let second = try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data(#"{"to":"+15555550101"}"#.utf8)))
        #expect(second.connectionReused)
        #expect(second.status == 200)
        #expect(second.retryAfter == nil)
        #expect(second.header("X-Only-First") == nil)
        #expect(String(decoding: second.body, as: UTF8.self) == #"{"status":"queued"}"#)
        let received = gateway.received
        try #require(received.count == 2)
        #expect(received[1].headers["authorization"] == nil)
        #expect(received[1].to == "+15555550101")
    }

    @Test(
        "answers and header lines larger than libcurl's receive buffer arrive whole: on a new handle, a reused one, and after a transfer libcurl refused before connecting"
    )
    func answersLargerThanTheBuffer() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        // Text that differs throughout: a chunk lost or read twice would change it.
        let body = (0..<20_000).map { String($0) }.joined(separator: ",")
        let header = String(repeating: "0123456789abcdef", count: 1_100)
        let receiveBuffer = 16 * 1024  // libcurl's default (CURL_MAX_WRITE_SIZE)
        #expect(body.utf8.count > 4 * receiveBuffer && header.utf8.count > receiveBuffer)
        gateway.script(Array(repeating: .init(status: 200, headers: ["X-Long": header], body: body), count: 3))
        func large(to: String) async throws {
            let response = try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data(#"{"to":"\#(to)"}"#.utf8)))
            #expect(response.status == 200)
            #expect(response.header("X-Long") == header)
            #expect(String(decoding: response.body, as: UTF8.self) == body)
        }
        try await large(to: "+15555550100")
        try await large(to: "+15555550101")
        // Refused before any connection: libcurl keeps that handle's receive buffer, and the handle goes
        // back to the pool with it.
        await #expect(throws: CurlError.self) { try await client.perform(CurlHTTPRequest(method: "GET", url: "dict://127.0.0.1:1/x")) }
        try await large(to: "+15555550102")
        #expect(gateway.received.map(\.to) == ["+15555550100", "+15555550101", "+15555550102"])
    }

    @Test("header lines are trimmed of spaces, tabs, CR and LF at both ends only")
    func headerLineTrimming() {
        func trim(_ text: String) -> String { String(decoding: HeaderLine.trimmed(Array(text.utf8)), as: UTF8.self) }
        #expect(trim("Retry-After: 7\r\n") == "Retry-After: 7")
        #expect(trim(" \t Location: http://a:1/ b \t\r\n") == "Location: http://a:1/ b")
        #expect(trim("\r\n") == "")
        #expect(trim("") == "")
        #expect(trim("x") == "x")
        #expect(trim("250 OK") == "250 OK")
    }

    @Test("reports Retry-After of a 429")
    func retryAfter() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        gateway.script([.init(status: 429, headers: ["Retry-After": "7"])])
        let response = try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data("{}".utf8)))
        #expect(response.status == 429)
        #expect(response.retryAfter == .seconds(7))
    }

    @Test("a refused connection is couldNotConnect: nothing was sent")
    func refused() async throws {
        do {
            _ = try await client.perform(CurlHTTPRequest(url: "http://127.0.0.1:1/sms", body: Data("{}".utf8)))
            Issue.record("expected a transport error")
        } catch {
            #expect(error.kind == .couldNotConnect)
        }
    }

    @Test("protocols other than http, https, smtp and smtps are refused before anything is read")
    func protocolsLimited() async throws {
        let secret = NSTemporaryDirectory() + "herald-curl-\(UUID().uuidString)"
        try Data("not for gateways".utf8).write(to: URL(fileURLWithPath: secret))
        defer { try? FileManager.default.removeItem(atPath: secret) }
        for url in ["file://\(secret)", "dict://127.0.0.1:1/x", "gopher://127.0.0.1:1/x"] {
            do {
                let response = try await client.perform(CurlHTTPRequest(method: "GET", url: url))
                Issue.record("\(url) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
            } catch {
                #expect(error.code == 1, "\(url): \(error)")  // CURLE_UNSUPPORTED_PROTOCOL
            }
        }
    }

    @Test("a server that never answers in time is failedAfterSending: it may have acted")
    func timeoutAfterSending() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        gateway.script([.init(status: 200, delay: .seconds(3))])
        do {
            _ = try await client.perform(
                CurlHTTPRequest(url: gateway.url, body: Data("{}".utf8), timeout: .milliseconds(500)))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.kind == .failedAfterSending)
            #expect(error.code == 28)
        }
        // The request left: the server sees it (possibly a moment after the client gave up).
        #expect(await eventually { gateway.received.count == 1 })
    }

    @Test("a cancelled request ends before the server answers, as failedAfterSending; the loop goes on serving")
    func cancellation() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        gateway.script([.init(status: 200, delay: .seconds(30))])
        let slow = Task { try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data("{}".utf8), timeout: .seconds(60))) }
        #expect(await eventually { gateway.received.count == 1 })
        slow.cancel()
        switch await slow.result {
        case .success(let response): Issue.record("the cancelled request waited for the answer: \(response.status)")
        case .failure(let error): #expect((error as? CurlError)?.kind == .failedAfterSending, "\(error)")
        }
        let next = try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data("{}".utf8)))
        #expect(next.status == 200)
    }

    @Test("many requests run concurrently on one loop")
    func concurrent() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        gateway.setFallback(.init(status: 200, delay: .milliseconds(200)))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<40 {
                group.addTask {
                    try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data("{\"n\":\"\(index)\"}".utf8))).status
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        // Sequential requests would never overlap at the server (at most 1 in flight). How many overlap
        // depends on how fast the 40 tasks are scheduled: on a loaded machine it was 10 once, so the
        // test asks only for overlap.
        #expect(gateway.maxInFlight > 1)
        #expect(gateway.received.count == 40)
    }

    @Test("a pool sized for the caller's concurrency keeps its connections through dips in the transfers in flight")
    func pooledConnectionsSurviveDips() async throws {
        let gateway = try await FakeSMSGateway.start()
        defer { Task { await gateway.stop() } }
        gateway.setFallback(.init(status: 200, delay: .milliseconds(150)))
        /// Waves of 12 at once, each followed by one request alone (a worker whose jobs all wait on one
        /// group commit): how many of the waves' requests after the first opened a connection.
        func openedAfterFirstWave(_ client: CurlClient) async throws -> Int {
            var opened = 0
            for wave in 0..<3 {
                let reused = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for _ in 0..<12 {
                        group.addTask { try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data("{}".utf8))).connectionReused }
                    }
                    return try await group.reduce(into: [Bool]()) { $0.append($1) }
                }
                if wave > 0 { opened += reused.filter { $0 == false }.count }
                _ = try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data("{}".utf8)))
            }
            return opened
        }
        let pooled = CurlClient(logger: quietLogger(), pooledConnections: 12)
        defer { pooled.shutdown() }
        #expect(try await openedAfterFirstWave(pooled) == 0)
        // libcurl's own sizing (four per transfer in flight when one ends) closes some at each dip; this
        // shows the test can tell the difference.
        let unsized = CurlClient(logger: quietLogger())
        defer { unsized.shutdown() }
        #expect(try await openedAfterFirstWave(unsized) > 0)
    }

    @Test("a provider that stops drops its kept-alive connection: the next transfer fails rather than reaching it")
    func stoppedServer() async throws {
        let gateway = try await FakeSMSGateway.start()
        let first = try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data(#"{"to":"+15555550100"}"#.utf8)))
        #expect(first.status == 200)
        await gateway.stop()
        await #expect(throws: (any Error).self) {
            try await client.perform(CurlHTTPRequest(url: gateway.url, body: Data(#"{"to":"+15555550101"}"#.utf8)))
        }
        #expect(gateway.receivedCount == 1)
    }
}
