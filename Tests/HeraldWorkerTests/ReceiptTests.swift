import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Delivery receipts from the generic gateway through the wire: signed callbacks move a sent message
/// to delivered or undelivered; anything unsigned changes nothing.
@Suite("Delivery receipts")
struct ReceiptTests {
    static let secret = Data((0..<32).map { UInt8($0 * 7 % 256) })

    static func signature(_ body: Data, secret: Data = ReceiptTests.secret) -> String {
        "sha256=" + HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: secret)).map { String(format: "%02x", $0) }.joined()
    }

    @Test(
        "signed receipts move a sent SMS to delivered / undelivered; bad or missing signatures 401, unknown references 404, counted",
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

            func callback(_ json: String, signature: String?, provider: String = "http") async throws -> HeraldClient.Answer {
                let body = Data(json.utf8)
                var headers: [(String, String)] = []
                if let signature { headers.append(("X-Herald-Signature", signature)) }
                return try await stack.client.send(
                    "POST", "/callbacks/sms/\(provider)", apiKey: nil, body: body, contentType: "application/json", headers: headers)
            }
            let delivered = #"{"reference":"\#(id)","messageId":"gw-123","status":"delivered"}"#
            // Unsigned, wrongly signed, signed under another secret: 401 and nothing changes.
            #expect(try await callback(delivered, signature: nil).status == 401)
            #expect(try await callback(delivered, signature: "sha256=" + String(repeating: "0", count: 64)).status == 401)
            #expect(
                try await callback(delivered, signature: Self.signature(Data(delivered.utf8), secret: Data(repeating: 1, count: 32))).status == 401)
            #expect(try await callback(delivered + " ", signature: Self.signature(Data(delivered.utf8))).status == 401, "the raw body is signed")
            #expect(try await message()["status"] as? String == "sent")

            let unknown = #"{"reference":"\#(UUID().uuidString.lowercased())","status":"delivered"}"#
            #expect(try await callback(unknown, signature: Self.signature(Data(unknown.utf8))).status == 404)
            for bad in [#"{"reference":"nope","status":"delivered"}"#, #"{"reference":"\#(id)","status":"read"}"#, "[1]"] {
                let answer = try await callback(bad, signature: Self.signature(Data(bad.utf8)))
                #expect(answer.status == 400, "\(bad)")
            }
            #expect(try await callback(delivered, signature: Self.signature(Data(delivered.utf8)), provider: "twilio").status == 404)

            let good = try await callback(delivered, signature: Self.signature(Data(delivered.utf8)))
            #expect(good.status == 204)
            var shown = try await message()
            #expect(shown["status"] as? String == "delivered")
            #expect(((shown["events"] as? [[String: Any]])?.last?["status"]) as? String == "delivered")

            let failed = #"{"reference":"\#(id)","status":"undelivered","errorCode":30003}"#
            #expect(try await callback(failed, signature: Self.signature(Data(failed.utf8))).status == 204)
            shown = try await message()
            #expect(shown["status"] as? String == "undelivered")
            #expect(shown["lastError"] as? String == "provider error 30003")

            let metrics = try await HeraldClient(port: stack.settings.apiMetricsPort).get("/metrics")
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(
                text.contains(#"herald_sms_receipts_total{status="delivered",country="US"} 1"#),
                "\(text.split(separator: "\n").filter { $0.contains("receipts") })")
            #expect(text.contains(#"herald_sms_receipts_total{status="undelivered",country="US"} 1"#))
            #expect(text.contains(#"herald_sms_receipts_total{status="unknown",country=""} 1"#))
        }
    }
}
