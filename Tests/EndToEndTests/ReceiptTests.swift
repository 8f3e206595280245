import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Delivery receipts from the generic gateway through the wire: signed, timestamped callbacks move a
/// sent message to delivered or undelivered, once; anything unsigned, stale or late changes no status.
@Suite("Delivery receipts")
struct ReceiptTests {
    static let secret = Data((0..<32).map { UInt8($0 * 7 % 256) })

    /// Written out rather than through `ReceiptSignature`, so the test pins the wire format itself.
    static func signature(_ signed: Data, secret: Data = ReceiptTests.secret) -> String {
        "sha256=" + HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret)).map { String(format: "%02x", $0) }.joined()
    }

    static func now() -> Int { Int(Date().timeIntervalSince1970) }

    /// What a gateway sends: the timestamp, and the signature over `<timestamp>.<body>`.
    static func signed(_ json: String, at timestamp: Int = now(), secret: Data = ReceiptTests.secret) -> [(String, String)] {
        [("X-Herald-Timestamp", "\(timestamp)"), ("X-Herald-Signature", signature(Data("\(timestamp).\(json)".utf8), secret: secret))]
    }

    @Test(
        "a signed receipt moves a sent SMS to delivered once; unsigned, body-only, stale or foreign signatures 401; late receipts stay events",
        arguments: TestStore.allCases)
    func receipts(_ store: TestStore) async throws {
        try await StackHarness.run(
            store: store,
            configure: {
                $0.callbackSecret = Self.secret.base64EncodedString()
                $0.messageIdPath = "/result/id"
            }
        ) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            stack.gateway.script([FakeSMSGateway.Reply(status: 200, body: #"{"result":{"id":"gw-123"}}"#)])
            _ = try await stack.sendCode(to: "+15555550101")
            try await stack.waitForGateway(1)
            let id = try #require(stack.gateway.received.first?.reference)
            let admin = TestConfiguration.adminHeader
            func message() async throws -> [String: any Sendable] {
                try await stack.client.get("/admin/v1/messages/\(id)", headers: admin).json
            }
            #expect(await eventually { (try? await message())?["status"] as? String == "sent" })
            #expect(try await message()["providerMessageId"] as? String == "gw-123", "read from the gateway's answer at messageIdPath")

            func callback(_ json: String, headers: [(String, String)], provider: String = "http") async throws -> HeraldClient.Answer {
                try await stack.client.send(
                    "POST", "/callbacks/sms/\(provider)", apiKey: nil, body: Data(json.utf8), contentType: "application/json", headers: headers)
            }
            let delivered = #"{"reference":"\#(id)","messageId":"gw-123","status":"delivered"}"#
            let at = Self.now()
            let refused: [(String, [(String, String)])] = [
                ("unsigned", []),
                ("no timestamp", [("X-Herald-Signature", Self.signature(Data("\(at).\(delivered)".utf8)))]),
                ("a signature over the body alone", [("X-Herald-Timestamp", "\(at)"), ("X-Herald-Signature", Self.signature(Data(delivered.utf8)))]),
                ("a zero signature", [("X-Herald-Timestamp", "\(at)"), ("X-Herald-Signature", "sha256=" + String(repeating: "0", count: 64))]),
                ("another secret", Self.signed(delivered, secret: Data(repeating: 1, count: 32))),
                ("signed 6 minutes ago", Self.signed(delivered, at: at - 360)),
                ("signed 6 minutes ahead", Self.signed(delivered, at: at + 360)),
                ("a timestamp in milliseconds", Self.signed(delivered, at: at * 1000)),
                ("another timestamp than the signed one", [("X-Herald-Timestamp", "\(at - 1)")] + Self.signed(delivered, at: at).suffix(1)),
            ]
            for (why, headers) in refused {
                let answer = try await callback(delivered, headers: headers)
                #expect(answer.status == 401, "\(why)")
                for (_, value) in headers where value.hasPrefix("sha256=") {
                    #expect(String(decoding: answer.body, as: UTF8.self).contains(value.dropFirst(7)) == false, "no MAC is echoed")
                }
            }
            #expect(try await callback(delivered + " ", headers: Self.signed(delivered)).status == 401, "the raw body is signed")
            let stale = try await callback(delivered, headers: Self.signed(delivered, at: at - 360))
            #expect(String(decoding: stale.body, as: UTF8.self).contains("300 seconds"), "the answer says why")
            #expect(try await message()["status"] as? String == "sent")

            let unknown = #"{"reference":"\#(UUID().uuidString.lowercased())","status":"delivered"}"#
            #expect(try await callback(unknown, headers: Self.signed(unknown)).status == 404)
            for bad in [#"{"reference":"nope","status":"delivered"}"#, #"{"reference":"\#(id)","status":"read"}"#, "[1]"] {
                let answer = try await callback(bad, headers: Self.signed(bad))
                #expect(answer.status == 400, "\(bad)")
            }
            #expect(try await callback(delivered, headers: Self.signed(delivered), provider: "twilio").status == 404)

            // Signed 4 minutes ago: inside the window.
            let good = Self.signed(delivered, at: at - 240)
            #expect(try await callback(delivered, headers: good).status == 204)
            var shown = try await message()
            #expect(shown["status"] as? String == "delivered")
            let events = { (shown: [String: any Sendable]) in (shown["events"] as? [[String: Any]]) ?? [] }
            #expect(events(shown).last?["status"] as? String == "delivered")
            let count = events(shown).count

            // The same receipt again (a provider retrying, or a replay inside the window): nothing changes.
            #expect(try await callback(delivered, headers: good).status == 204)
            #expect(events(try await message()).count == count)

            // A later receipt that says otherwise is an event; the first final status stays.
            let failed = #"{"reference":"\#(id)","status":"undelivered","errorCode":30003}"#
            #expect(try await callback(failed, headers: Self.signed(failed)).status == 204)
            shown = try await message()
            #expect(shown["status"] as? String == "delivered")
            #expect(shown["lastError"] as? String == nil)
            #expect(events(shown).count == count + 1)
            #expect(events(shown).last?["status"] as? String == "undelivered")
            #expect((events(shown).last?["detail"] as? String)?.contains("stays delivered") == true)

            // An undelivered receipt is a first final status like any other.
            _ = try await stack.sendCode(to: "+15555550102")
            try await stack.waitForGateway(2)
            let second = try #require(stack.gateway.received.last?.reference)
            func secondMessage() async throws -> [String: any Sendable] {
                try await stack.client.get("/admin/v1/messages/\(second)", headers: admin).json
            }
            #expect(await eventually { (try? await secondMessage())?["status"] as? String == "sent" })
            let lost = #"{"reference":"\#(second)","status":"undelivered","errorCode":30003}"#
            #expect(try await callback(lost, headers: Self.signed(lost)).status == 204)
            shown = try await secondMessage()
            #expect(shown["status"] as? String == "undelivered")
            #expect(shown["lastError"] as? String == "provider error 30003")

            let metrics = try await HeraldClient(port: stack.settings.apiMetricsPort).get("/metrics")
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(
                text.contains(#"herald_sms_receipts_total{provider="http",status="delivered",country="US"} 1"#),
                "\(text.split(separator: "\n").filter { $0.contains("receipts") })")
            #expect(text.contains(#"herald_sms_receipts_total{provider="http",status="repeated",country=""} 1"#))
            #expect(text.contains(#"herald_sms_receipts_total{provider="http",status="late",country=""} 1"#))
            #expect(text.contains(#"herald_sms_receipts_total{provider="http",status="undelivered",country="US"} 1"#))
            #expect(text.contains(#"herald_sms_receipts_total{provider="http",status="unknown",country=""} 1"#))
        }
    }
}
