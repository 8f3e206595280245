import Foundation
import HeraldAMQP
import HeraldAPI
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Limit decisions run in-process (`RouterHarness`: memory store and publisher); what depends on the
/// client's address goes through a real socket (`APIHarness`: real broker, real SQLite).
@Suite("Admission limits on the Identity Toolkit wire")
struct LimitsTests {
    let key = TestConfiguration.apiKey
    let send = Paths.v1 + "sendVerificationCode"

    @Test("per number: the allowance passes, then TOO_MANY_ATTEMPTS_TRY_LATER with Retry-After and nothing published")
    func perNumber() async throws {
        let harness = try RouterHarness { $0.limits = #"{perNumber: ["3/10m"], perIP: [], perProject: [], pumping: {enabled: false}}"# }
        try await harness.run { client in
            for _ in 0..<3 { #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).status == 200) }
            let refused = try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"])
            #expect(refused.status == 400)
            #expect(refused.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            let retryAfter = try #require(refused.header("retry-after").flatMap(Int.init))
            // One send every 200 s after the burst; less the time the three sends took.
            #expect((1...200).contains(retryAfter))
            #expect(harness.publishedJobs().count == 3)
            // Another number is unaffected; test numbers are exempt.
            #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550101"]).status == 200)
            for _ in 0..<5 { #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+16505553434"]).status == 200) }
            #expect(harness.logs.text.contains("send refused by a limit"))
            #expect(harness.logs.text.contains("limit=limits.perNumber"))
            // After the spacing the next one passes.
            harness.clock.advance(Double(retryAfter))
            #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).status == 200)
        }
    }

    @Test("per project, country and prefix answer QUOTA_EXCEEDED : Exceeded quota for sending verification codes.")
    func quotas() async throws {
        for limits in [
            #"{perProject: ["2/1h"], perIP: [], perNumber: [], pumping: {enabled: false}}"#,
            #"{perCountry: ["2/1h"], perIP: [], perNumber: [], perProject: [], pumping: {enabled: false}}"#,
            #"{perPrefix: ["2/1h"], prefixDigits: 4, perIP: [], perNumber: [], perProject: [], pumping: {enabled: false}}"#,
        ] {
            let harness = try RouterHarness { $0.limits = limits }
            try await harness.run { client in
                #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).status == 200)
                #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550101"]).status == 200)
                let refused = try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550102"])
                #expect(refused.errorMessage == "QUOTA_EXCEEDED : Exceeded quota for sending verification codes.", "\(limits)")
                #expect(refused.header("retry-after") != nil)
                // A different country / prefix still passes when the limit is per country / prefix.
                let other = try await client.post(send, apiKey: key, json: ["phoneNumber": "+447911123456"])
                #expect(other.status == (limits.hasPrefix("{perProject") ? 400 : 200), "\(limits)")
            }
        }
    }

    @Test("per IP: X-Forwarded-For is ignored from untrusted peers")
    func forwardedForUntrusted() async throws {
        let harness = try APIHarness { $0.limits = #"{perIP: ["2/1h"], perNumber: [], perProject: [], pumping: {enabled: false}}"# }
        try await harness.run { client, _ in
            for index in 0..<2 {
                let answer = try await client.post(
                    send, apiKey: key, json: ["phoneNumber": "+1555555010\(index)"], headers: [("X-Forwarded-For", "203.0.113.\(index)")])
                #expect(answer.status == 200)
            }
            // Forging another address does not help: the peer (127.0.0.1) is what counts.
            let forged = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550109"], headers: [("X-Forwarded-For", "198.51.100.77")])
            #expect(forged.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
    }

    @Test("per IP: behind a trusted proxy each forwarded client has its own allowance")
    func forwardedForTrusted() async throws {
        let harness = try APIHarness {
            $0.limits = #"{perIP: ["2/1h"], perNumber: [], perProject: [], pumping: {enabled: false}}"#
            $0.trustedProxies = ["127.0.0.1"]
        }
        try await harness.run { client, _ in
            for client0 in ["203.0.113.1", "203.0.113.2"] {
                for index in 0..<2 {
                    let answer = try await client.post(
                        send, apiKey: key, json: ["phoneNumber": "+1555555020\(index)"], headers: [("X-Forwarded-For", client0)])
                    #expect(answer.status == 200, "\(client0) #\(index)")
                }
            }
            let third = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550209"], headers: [("X-Forwarded-For", "9.9.9.9, 203.0.113.1")])
            #expect(third.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            // IPv6 clients share one allowance per /64.
            for suffix in ["1", "2"] {
                #expect(
                    try await client.post(
                        send, apiKey: key, json: ["phoneNumber": "+15555550301"], headers: [("X-Forwarded-For", "2001:db8:0:7::\(suffix)")]
                    ).status == 200)
            }
            let sameSubnet = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550302"], headers: [("X-Forwarded-For", "2001:db8:0:7:ffff::3")])
            #expect(sameSubnet.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
        }
    }

    @Test("region policy refuses with Firebase's message; allowed regions pass")
    func regions() async throws {
        let harness = try RouterHarness { $0.regions = "{allow: [], deny: [RU, GB]}" }
        try await harness.run { client in
            let refused = try await client.post(send, apiKey: key, json: ["phoneNumber": "+447911123456"])
            #expect(refused.status == 400)
            #expect(refused.errorMessage == "OPERATION_NOT_ALLOWED : SMS unable to be sent until this region enabled by the app developer")
            #expect(
                try await client.post(send, apiKey: key, json: ["phoneNumber": "+79161234567"]).errorMessage?.hasPrefix("OPERATION_NOT_ALLOWED")
                    == true)
            #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+77011234567"]).status == 200)
            #expect(harness.publishedJobs().count == 1)
        }
        let allowList = try RouterHarness { $0.regions = "{allow: [US], deny: []}" }
        try await allowList.run { (client: RouterClient) async throws in
            #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).status == 200)
            #expect(
                try await client.post(send, apiKey: key, json: ["phoneNumber": "+14165550199"]).errorMessage?.hasPrefix("OPERATION_NOT_ALLOWED")
                    == true)
        }
    }

    @Test("code checks per number are limited across sessions")
    func checksPerNumber() async throws {
        let harness = try RouterHarness {
            $0.limits = #"{checksPerNumber: ["2/1h"], perIP: [], perNumber: [], perProject: [], pumping: {enabled: false}}"#
            $0.maxCheckAttempts = 10
        }
        try await harness.run { client in
            let signIn = Paths.v1 + "signInWithPhoneNumber"
            let first = try #require(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).string("sessionInfo"))
            for _ in 0..<2 {
                #expect(try await client.post(signIn, apiKey: key, json: ["sessionInfo": first, "code": "000000"]).errorMessage == "INVALID_CODE")
            }
            // A fresh session does not reset the number's budget, even with the right code.
            let second = try #require(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).string("sessionInfo"))
            let code = try harness.code(in: try #require(harness.publishedJobs().last))
            let refused = try await client.post(signIn, apiKey: key, json: ["sessionInfo": second, "code": code])
            #expect(refused.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(refused.header("retry-after") != nil)
            // Test numbers are exempt.
            for _ in 0..<4 {
                let session = try #require(try await client.post(send, apiKey: key, json: ["phoneNumber": "+16505553434"]).string("sessionInfo"))
                #expect(try await client.post(signIn, apiKey: key, json: ["sessionInfo": session, "code": "654321"]).status == 200)
            }
        }
    }

    @Test("a send the broker never confirmed does not spend the client's limits")
    func refundOnPublishFailure() async throws {
        let harness = try RouterHarness { $0.limits = #"{perNumber: ["1/1h"], perIP: [], perProject: [], pumping: {enabled: false}}"# }
        harness.publisher.setFailing(true)
        try await harness.run { client in
            for _ in 0..<3 {
                let answer = try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"])
                #expect(answer.status == 503)
                #expect(answer.header("retry-after") == "5")
            }
            let states = try await harness.store.rateStates(kind: "number", subject: "+15555550100", project: nil)
            let remaining = GCRA.remaining(
                tat: states.first?.tat, now: Date().microsecondsSince1970, parameters: GCRA.Parameters(RatePolicy.parse("1/1h")!))
            #expect(remaining == 1)
            // Once the broker confirms again, the one allowed send goes out and the next is refused.
            harness.publisher.setFailing(false)
            #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).status == 200)
            #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"]).errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(harness.publishedJobs().count == 1)
        }
    }
}
