import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// herald-api and herald-sms-worker against fake Twilio, Vonage and Telnyx servers that speak the
/// providers' own wire: sends, refusals, failover between them, and their signed receipts.
@Suite("SMS providers end to end")
struct SMSProviderTests {
    static let sid = "AC" + String(repeating: "b2", count: 16)
    static let telnyxKey = Curve25519.Signing.PrivateKey()

    static func twilio() async throws -> FakeSMSProvider {
        try await FakeSMSProvider.start(.twilio(accountSid: sid, authToken: "twilio-token"))
    }

    static func vonage() async throws -> FakeSMSProvider {
        try await FakeSMSProvider.start(.vonage(apiKey: "vkey", apiSecret: "vsecret", signatureSecret: "vsig", method: .sha256))
    }

    static func telnyx() async throws -> FakeSMSProvider {
        try await FakeSMSProvider.start(.telnyx(apiKey: "KEYTELNYX", signingKey: telnyxKey))
    }

    /// `sms.providers` entries for the fakes, in order, and a breaker that acts within a test's time.
    static func configure(
        _ settings: inout TestConfiguration, _ providers: [(String, FakeSMSProvider)], routes: String? = nil,
        breaker: String = "{consecutiveFailures: 5, coolDown: 2s, probes: 2}"
    ) {
        var lines = ["callbackBaseUrl: http://127.0.0.1:\(settings.apiPort)", "breaker: \(breaker)", "providers:"]
        for (name, fake) in providers {
            switch fake.dialect {
            case .twilio(let sid, let token):
                lines.append(
                    "  - {name: \(name), type: twilio, baseUrl: \"\(fake.baseURL)\", accountSid: \(sid), authToken: \(token), from: \"+15005550006\", timeout: 2s}"
                )
            case .vonage(let key, let secret, let signature, let method):
                lines.append(
                    "  - {name: \(name), type: vonage, baseUrl: \"\(fake.baseURL)\", apiKey: \(key), apiSecret: \(secret), signatureSecret: \(signature), signatureMethod: \(method.rawValue), receiptToken: token-0123456789abcdef, from: Herald, timeout: 2s}"
                )
            case .telnyx(let key, let signing):
                lines.append(
                    "  - {name: \(name), type: telnyx, baseUrl: \"\(fake.baseURL)\", apiKey: \(key), publicKey: \"\(signing.publicKey.rawRepresentation.base64EncodedString())\", from: \"+15005550006\", timeout: 2s}"
                )
            }
        }
        if let routes { lines.append("routes: \(routes)") }
        settings.smsExtra = lines
        settings.retryDelays = ["200ms", "500ms", "1s", "2s"]
    }

    static func status(_ stack: StackHarness, _ job: String) async throws -> String? {
        try await stack.client.get("/admin/v1/messages/\(job)", headers: TestConfiguration.adminHeader).json["status"] as? String
    }

    @Test(
        "each provider: a code sent through its fake, then its signed receipt delivers it; bad, stale and missing signatures 401",
        arguments: [0, 1, 2])
    func sendAndReceipt(_ which: Int) async throws {
        let fake = try await [Self.twilio, Self.vonage, Self.telnyx][which]()
        defer { Task { await fake.stop() } }
        let name = ["twilio", "vonage", "telnyx"][which]
        try await StackHarness.run(configure: { Self.configure(&$0, [(name, fake)]) }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            _ = try await stack.sendCode(to: "+15555550111")
            #expect(await eventually { fake.accepted.count == 1 })
            let message = try #require(fake.accepted.first)
            let job = try #require(message.jobID)
            #expect(message.text.contains(" is your verification code") || message.text.isEmpty == false)
            #expect(await eventually { (try? await Self.status(stack, job)) == "sent" })
            let record = try await stack.client.get("/admin/v1/messages/\(job)", headers: TestConfiguration.adminHeader).json
            #expect(record["provider"] as? String == name && record["providerMessageId"] as? String == message.id)

            // Vonage's message named the token path (which takes unsigned receipts); its signed path checks signatures.
            let signed = which == 1 ? "http://127.0.0.1:\(stack.settings.apiPort)/callbacks/sms/\(name)" : nil
            if which == 1 { #expect(message.callbackURL == signed! + "/token-0123456789abcdef") }
            #expect(try await fake.sendReceipt(for: message, .delivered, signing: .missing, url: signed) == 401)
            #expect(try await fake.sendReceipt(for: message, .delivered, signing: .wrong, url: signed) == 401)
            if which != 0 { #expect(try await fake.sendReceipt(for: message, .delivered, signing: .stale(seconds: 400), url: signed) == 401) }
            #expect(try await Self.status(stack, job) == "sent", "a refused receipt changes nothing")
            #expect(try await fake.sendReceipt(for: message, .interim, url: signed) == 204)
            #expect(try await fake.sendReceipt(for: message, .delivered, url: signed) == 204)
            #expect(try await Self.status(stack, job) == "delivered")
            #expect(try await fake.sendReceipt(for: message, .failed(code: "30003"), url: signed) == 204, "late: answered, not applied")
            #expect(try await fake.sendReceipt(for: message, .interim, url: signed) == 204, "out of order: an interim status after the final one")
            #expect(try await fake.sendReceipt(for: message, .delivered, url: signed) == 204, "a duplicate")
            #expect(try await Self.status(stack, job) == "delivered")
            if which == 1 {
                // Vonage's unsigned path needs the token; JSON and GET receipts too.
                let unsigned = "http://127.0.0.1:\(stack.settings.apiPort)/callbacks/sms/\(name)/token-0123456789abcdef"
                #expect(try await fake.sendReceipt(for: message, .delivered, signing: .missing, vonage: .json, url: unsigned) == 204)
                #expect(try await fake.sendReceipt(for: message, .delivered, signing: .missing, vonage: .query, url: unsigned) == 204)
                let wrongToken = "http://127.0.0.1:\(stack.settings.apiPort)/callbacks/sms/\(name)/token-wrong-0123456789"
                #expect(try await fake.sendReceipt(for: message, .delivered, signing: .missing, url: wrongToken) == 404)
            }
            let unknown = "http://127.0.0.1:\(stack.settings.apiPort)/callbacks/sms/nobody"
            #expect(try await fake.sendReceipt(for: message, .delivered, url: unknown) == 404)
        }
    }

    @Test("answers about the number end the job at the first provider; an auth failure fails over to the second")
    func refusalsAndAuthFailover() async throws {
        let primary = try await Self.twilio()
        let secondary = try await Self.vonage()
        defer {
            Task {
                await primary.stop()
                await secondary.stop()
            }
        }
        try await StackHarness.run(configure: { Self.configure(&$0, [("twilio", primary), ("vonage", secondary)]) }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            primary.behave(.refuse(code: "21211"), for: "+15555550121")
            primary.behave(.refuse(code: "30450"), for: "+15555550122")
            _ = try await stack.sendCode(to: "+15555550121")
            _ = try await stack.sendCode(to: "+15555550122")
            #expect(await eventually { primary.receivedCount == 2 })
            try await Task.sleep(for: .milliseconds(500))
            #expect(secondary.receivedCount == 0, "an invalid number and a fraud block are not routed round")

            primary.behave(.refuse(code: "20003"))
            _ = try await stack.sendCode(to: "+15555550123")
            #expect(await eventually { secondary.accepted.count == 1 })
            #expect(secondary.accepted.first?.to == "+15555550123")
            let job = try #require(secondary.accepted.first.flatMap(\.jobID))
            let events = try await stack.client.get("/admin/v1/messages/\(job)", headers: TestConfiguration.adminHeader).json["events"]
            #expect("\(events ?? "")".contains("attempt 1 twilio 20003, next vonage"), "\(events ?? "")")
        }
    }

    @Test(
        "the primary answers 503 for a stretch of sends: its breaker opens, the secondary takes them, every send reaches exactly one provider once, and probes close it after"
    )
    func outageFailsOver() async throws {
        let primary = try await Self.twilio()
        let secondary = try await Self.telnyx()
        defer {
            Task {
                await primary.stop()
                await secondary.stop()
            }
        }
        try await StackHarness.run(configure: { Self.configure(&$0, [("twilio", primary), ("telnyx", secondary)]) }) { stack in
            try await stack.startAPI()
            let metricsPort = freePort()
            try await stack.startWorker(metricsPort: metricsPort)
            try await stack.startWorker()
            let sends = 300
            primary.behave(.status(503), until: Date().addingTimeInterval(3600))
            var accepted = 0
            for index in 0..<sends {
                if index == 200 { primary.behave(.accept) }
                if (try? await stack.sendCode(to: "+1555556\(String(format: "%04d", index))")) != nil { accepted += 1 }
                if index == 200 { try await Task.sleep(for: .milliseconds(2500)) }
            }
            #expect(accepted == sends)
            #expect(await eventually(timeout: .seconds(60)) { primary.accepted.count + secondary.accepted.count == sends })
            try await Task.sleep(for: .seconds(1))
            let jobs = (primary.accepted + secondary.accepted).compactMap(\.jobID)
            #expect(jobs.count == sends && Set(jobs).count == sends, "each send at exactly one provider, once")
            let failed = primary.receivedCount - primary.accepted.count
            #expect(failed >= 5 && failed < 60, "the breaker opened after a handful of 503s, not after every send: \(failed)")
            #expect(primary.accepted.count > 0, "probes closed the breaker and the primary took traffic again")
            let metrics = String(decoding: try await HeraldClient(port: metricsPort).get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"herald_sms_provider_attempts_total{provider="twilio",outcome="provider_failure",code="20500"}"#))
            #expect(metrics.contains(#"herald_sms_provider_state{provider="twilio"} 0"#), "closed again")
        }
    }

    @Test(
        "herald-admin providers open drains a provider for two workers within a second, status shows it, close restores it",
        arguments: TestStore.allCases)
    func operatorHold(_ store: TestStore) async throws {
        let primary = try await Self.twilio()
        let secondary = try await Self.telnyx()
        defer {
            Task {
                await primary.stop()
                await secondary.stop()
            }
        }
        try await StackHarness.run(store: store, configure: { Self.configure(&$0, [("twilio", primary), ("telnyx", secondary)]) }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            try await stack.startWorker()
            _ = try await stack.sendCode(to: "+15555550131")
            #expect(await eventually { primary.accepted.count == 1 })
            #expect(try await stack.admin(["providers", "open", "twilio"]).contains("twilio: forced-open"))
            try await Task.sleep(for: .seconds(1))
            for index in 0..<20 { _ = try await stack.sendCode(to: "+155555502\(String(format: "%02d", index))") }
            #expect(await eventually { secondary.accepted.count == 20 })
            #expect(primary.receivedCount == 1, "neither worker sent to the drained provider")
            let status = try await stack.admin(["providers", "status", "--no-header"])
            #expect(status.contains("twilio\ttwilio\tforced-open\t"), "\(status)")
            #expect(status.contains("telnyx\ttelnyx\tclosed\t-\t"), "\(status)")
            let json = try await stack.admin(["providers", "status", "--json"])
            #expect(json.contains(#""state":"forced-open""#), "\(json)")
            let page = String(decoding: try await stack.client.get("/admin/", headers: TestConfiguration.adminHeader).body, as: UTF8.self)
            #expect(
                page.contains(#"<section id="providers">"#) && page.contains("<td>twilio</td><td>twilio</td><td>forced-open</td>"),
                "\(page.prefix(0))")

            #expect(try await stack.admin(["providers", "close", "twilio"]).contains("twilio: forced-closed"))
            try await Task.sleep(for: .seconds(1))
            for index in 0..<5 { _ = try await stack.sendCode(to: "+155555503\(String(format: "%02d", index))") }
            #expect(await eventually { primary.accepted.count == 6 })
            #expect(try await stack.adminExit(["providers", "open", "nobody"]).status != 0)
        }
    }
}
