import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The status page on a real stack: over HTTP (login, escaping, CSRF) and in headless Chromium (log in,
/// search a message and open it, replay a dead letter). Screenshots stay in .herald/status-page/.
@Suite("Status page")
struct StatusPageTests {
    @Test(
        "Chromium logs in, finds a message by number and shows its transitions, and replays a dead letter; the page escapes what it prints and checks CSRF"
    )
    func statusPage() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            _ = try await stack.sendCode(to: "+15555550601")
            try await stack.waitForGateway(1)
            // The second is refused for good, with an answer that tries to inject markup.
            // A prepend scalar before < and a combining mark after > hide them from an escaper of Characters.
            stack.gateway.script([
                FakeSMSGateway.Reply(
                    status: 422,
                    body: "\u{0600}<meta http-equiv=refresh content=0;url=https://phish.example/>\u{0301}" + #"<script>alert("x")</script>"#)
            ])
            _ = try await stack.sendCode(to: "+15555550602")
            let deadQueue = stack.topology.deadQueue(.sms)
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 })
            let deadID = try #require(stack.gateway.received.first { $0.to == "+15555550602" }?.reference)
            let store = try await stack.store
            #expect(await eventually { (try? await store.deliveryStatus(jobID: UUID(uuidString: deadID)!))?.status == .failed })

            // Over plain HTTP first.
            let login = try await stack.client.get("/admin/")
            #expect(login.status == 200)
            #expect(String(decoding: login.body, as: UTF8.self).contains("name=\"token\""), "a login form, nothing else")
            #expect(String(decoding: login.body, as: UTF8.self).contains("Queues") == false)
            let page = try await stack.client.get("/admin/?to=%2B15555550602", headers: TestConfiguration.adminHeader)
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(page.status == 200)
            #expect(page.header("content-security-policy")?.contains("default-src 'none'") == true)
            #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), "the gateway's answer is shown escaped")
            #expect(html.contains("<script>") == false)
            #expect(html.contains("<meta http-equiv") == false && html.contains("\u{0600}&lt;meta http-equiv"), "escaped whatever precedes it")
            #expect(
                html.components(separatedBy: "+15555550602").count == 2, "the number only in the search field it was typed into; listings mask it")
            #expect(html.contains("+15*****0602"))
            // This herald-api took the housekeeping turn at its first pass.
            #expect(html.contains("<section id=\"housekeeping\">") && html.contains("held by \(ProcessInfo.processInfo.hostName):\(stack.api!.pid):"))
            let wrongToken = try await stack.client.postForm("/admin/login", form: "token=nope")
            #expect(wrongToken.status == 401)
            let session = try await stack.client.postForm("/admin/login", form: "token=\(TestConfiguration.adminToken)")
            #expect(session.status == 303)
            let setCookie = try #require(session.header("set-cookie"))
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
            let cookie = String(setCookie.split(separator: ";")[0])
            let forged = try await stack.client.send(
                "POST", "/admin/blocks/lift", apiKey: nil, body: Data("project=p&prefix=%2B1555".utf8),
                contentType: "application/x-www-form-urlencoded", headers: [("Cookie", cookie)])
            #expect(forged.status == 403, "a session's form without its CSRF token is refused")
            #expect(try await stack.client.postForm("/admin/blocks/lift", form: "project=p&prefix=%2B1555").status == 401)

            // Then as a person would, in Chromium.
            let shots = TestConfiguration.repositoryRoot.appendingPathComponent(".herald/status-page").path
            let script = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/status_page.py").path
            let output = try await shell(
                "\(shellQuoted(SMTPSink.python)) \(shellQuoted(script)) http://127.0.0.1:\(stack.settings.apiPort) "
                    + "\(shellQuoted(TestConfiguration.adminToken)) +15555550601 \(deadID) \(shellQuoted(shots))")
            let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") })
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(seen["loginForm"] as? Bool == true)
            #expect((seen["dashboard"] as? String)?.contains(stack.topology.workQueue(.sms)) == true, "\(seen["dashboard"] ?? "")")
            let cookies = seen["cookie"] as? [[String: Any]] ?? []
            #expect(
                cookies.contains {
                    $0["name"] as? String == "herald_admin" && $0["httpOnly"] as? Bool == true && $0["sameSite"] as? String == "Strict"
                })
            let found = seen["found"] as? [String] ?? []
            #expect(found.count == 1 && found[0].contains("+15*****0601") && found[0].contains("sent"), "\(found)")
            let events = seen["events"] as? [String] ?? []
            #expect(events.count == 3 && events[0].contains("queued") && events[2].contains("sent"), "\(events)")
            #expect((seen["deadLetters"] as? String)?.contains(deadID) == true)
            #expect(seen["replayed"] as? String == "Replayed \(deadID).")
            for shot in ["dashboard", "search", "message", "replay"] {
                #expect(FileManager.default.fileExists(atPath: "\(shots)/\(shot).png"), "screenshot \(shot)")
            }
            // The replayed job went back to the work queue and out to the gateway.
            try await stack.waitForGateway(3)
            #expect(stack.gateway.received[2].reference == deadID)
            #expect(try await TestBroker.depth(deadQueue, using: stack.admin) == 0)
            #expect(await eventually { (try? await store.deliveryStatus(jobID: UUID(uuidString: deadID)!))?.status == .sent })
        }
    }
}

/// Consumers as the broker reports them, on any host, and the one that holds jobs while they age.
@Suite("Status page: live consumers", .serialized)
struct StatusPageConsumerTests {
    @Test("every consumer the broker reports is listed; one frozen with its prefetched jobs is flagged once the oldest waits past stuckAfter")
    func stuckConsumer() async throws {
        try await StackHarness.run(configure: {
            $0.amqpExtra = #"managementUrl: "http://127.0.0.1:15672""#
            $0.stuckAfter = "1s"
        }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            let frozen = try await stack.startWorker()
            // Its consumer connects after its publisher: frozen only once the broker counts it.
            try await frozen.waitForOutput("worker consumer")
            kill(frozen.pid, SIGSTOP)
            defer { kill(frozen.pid, SIGCONT) }
            for index in 0..<8 { _ = try await stack.sendCode(to: "+1555555\(String(format: "%04d", 700 + index))") }
            var page = ""
            let flagged = await eventually(timeout: .seconds(40)) {
                page = String(
                    decoding: (try? await stack.client.get("/admin/", headers: TestConfiguration.adminHeader).body) ?? Data(), as: UTF8.self)
                return page.contains("stopped or stuck?")
            }
            #expect(flagged, "\(page)")
            // Both consumers are listed by their connection names, which carry each instance.
            #expect(page.components(separatedBy: "herald-sms-worker consumer ").count - 1 == 2, "\(page)")
            #expect(page.components(separatedBy: "stopped or stuck?").count - 1 == 1, "only the frozen one")
        }
    }
}

/// The status page's login sessions against a real herald-api: kept in the store, ended by logout for
/// every copy of the cookie, limited per address, answered in a fixed time.
@Suite("Status page sessions")
struct AdminSessionWireTests {
    static func form(_ text: String, cookie: String) -> (Data, [(String, String)]) { (Data(text.utf8), [("Cookie", cookie)]) }

    @Test("logout ends the session for every copy of its cookie; the cookie names its token by an HMAC key id and is Secure")
    func logoutEndsSession() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            let login = try await stack.client.postForm("/admin/login", form: "token=\(TestConfiguration.adminToken)")
            #expect(login.status == 303)
            let setCookie = try #require(login.header("set-cookie"))
            #expect(setCookie.contains("; Secure"), "Secure on a loopback bind without devMode: \(setCookie)")
            let cookie = String(setCookie.split(separator: ";")[0])
            let value = String(cookie.dropFirst("herald_admin=".count))
            #expect(value.wholeMatch(of: /[0-9a-f]{16}\.[A-Za-z0-9_-]{43}/) != nil, "\(value)")
            #expect(value.contains(String(SHA256Hex.digest(TestConfiguration.adminToken).prefix(16))) == false)

            let dashboard = try await stack.client.get("/admin/", headers: [("Cookie", cookie)])
            let html = String(decoding: dashboard.body, as: UTF8.self)
            #expect(html.contains("Queues"))
            let csrf = try #require(html.firstMatch(of: /name="csrf" value="([0-9a-f]{64})"/)?.1)
            let logout = try await stack.client.send(
                "POST", "/admin/logout", apiKey: nil, body: Data("csrf=\(csrf)".utf8), contentType: "application/x-www-form-urlencoded",
                headers: [("Cookie", cookie)])
            #expect(logout.status == 303)
            // The same cookie (a copy kept elsewhere, say) no longer opens anything.
            let after = try await stack.client.get("/admin/", headers: [("Cookie", cookie)])
            #expect(String(decoding: after.body, as: UTF8.self).contains("name=\"token\""), "the login form again")
            let lift = try await stack.client.send(
                "POST", "/admin/blocks/lift", apiKey: nil, body: Data("project=p&prefix=%2B1555&csrf=\(csrf)".utf8),
                contentType: "application/x-www-form-urlencoded", headers: [("Cookie", cookie)])
            #expect(lift.status == 401)
        }
    }

    @Test("logins are limited per address, the right token included, with Retry-After; every answer takes the same time")
    func loginLimit() async throws {
        try await StackHarness.run(configure: {
            $0.limits =
                "{perNumber: [\"100/1m\"], perIP: [\"1000/1m\"], perProject: [\"10000/1m\"], adminLoginsPerIP: [\"3/15m\"], pumping: {enabled: false}}"
        }) { stack in
            try await stack.startAPI()
            var statuses: [Int] = []
            var answer: HeraldClient.Answer?
            for token in ["nope", "wrong", TestConfiguration.adminToken, TestConfiguration.adminToken] {
                let started = ContinuousClock.now
                answer = try await stack.client.postForm("/admin/login", form: "token=\(token)")
                let took = ContinuousClock.now - started
                #expect(took >= .milliseconds(250), "\(token == TestConfiguration.adminToken ? "right" : "wrong") token answered in \(took)")
                statuses.append(answer?.status ?? 0)
            }
            #expect(statuses == [401, 401, 303, 429])
            let retryAfter = try #require(answer?.header("retry-after").flatMap(Int.init))
            #expect((1...900).contains(retryAfter))
            #expect(answer?.header("set-cookie") == nil)
        }
    }
}
