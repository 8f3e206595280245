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

    @Test(
        "busy shared limits are leased into the process: sends spend leased tokens, a send another limit refuses gives its tokens back and names that limit, and a country passes its allowance exactly"
    )
    func leasedSharedLimits() async throws {
        // The project's limit never refuses; the country's 640/1h does. Both are leased (at most a 32nd of
        // the burst at once, 20 for the country), a token is good for a second. The project is checked
        // before the country, so a refusal by the country comes from the store's second check.
        let harness = try RouterHarness {
            $0.limits =
                #"{perNumber: ["1/1h"], perIP: [], perProject: ["64000/1h"], perCountry: ["640/1h"], pumping: {enabled: false}, leasing: {above: 1, lifetime: 1s}}"#
        }
        let interval = GCRA.Parameters(RatePolicy.parse("640/1h")!).interval
        try await harness.run { client in
            var passed = 0
            var leasedAhead = false
            func sendOnce(_ phone: String) async throws -> HeraldClient.Answer {
                let answer = try await client.post(send, apiKey: key, json: ["phoneNumber": phone])
                if answer.status == 200 {
                    passed += 1
                } else {
                    #expect(answer.errorMessage == "QUOTA_EXCEEDED : Exceeded quota for sending verification codes.")
                }
                return answer
            }
            let started = Date()
            for index in 0..<700 {
                let phone = "+1555556" + String(1000 + index)
                let first = try await sendOnce(phone)
                // The same number again: its own limit refuses it, with its own error, whether or not leased
                // tokens covered the project and the country; those tokens go back to the process.
                if index.isMultiple(of: 2), first.status == 200 {
                    #expect(try await client.post(send, apiKey: key, json: ["phoneNumber": phone]).errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
                }
                // The country's row has been charged for more sends than went out: a lease took them ahead.
                if index < 600, try await harness.charged(kind: "country", subject: "US", policy: "640/1h") > passed { leasedAhead = true }
            }
            // Tokens still held lapse after their second and go back to the store; the next sends spend them.
            try await Task.sleep(for: .milliseconds(1200))
            for index in 0..<40 { _ = try await sendOnce("+1555557" + String(1000 + index)) }
            #expect(leasedAhead)
            // 640, and one more for each refill the run lasted into (one every 5.6 s; a loaded machine
            // can take several seconds over these sends).
            let refills = Int(Date().timeIntervalSince(started) * 1_000_000) / Int(interval) + 1
            #expect((640...(640 + refills)).contains(passed), "\(passed) sends passed a 640/1h country limit")
            #expect(harness.publishedJobs().count == passed)
            #expect(harness.logs.text.contains("limit=limits.perNumber"))
            #expect(harness.logs.text.contains("limit=limits.perCountry"))
            #expect(harness.logs.text.contains("limit=limits.perProject") == false)
        }
    }

    @Test(
        "SMS and email sends spend one leased project allowance: email sends spend leased tokens, one another limit refuses gives them back, and together they pass the allowance exactly"
    )
    func leasedAllowanceSharedWithEmail() async throws {
        let harness = try RouterHarness {
            $0.limits =
                #"{perNumber: ["1/1h"], perEmail: ["1/1h"], perIP: [], perProject: ["640/1h"], pumping: {enabled: false}, leasing: {above: 1, lifetime: 1s}}"#
        }
        let interval = GCRA.Parameters(RatePolicy.parse("640/1h")!).interval
        try await harness.run { client in
            var passed = 0
            var leasedAhead = false
            func charged() async throws -> Int {
                try await harness.charged(kind: "project", subject: TestConfiguration.projectID, policy: "640/1h")
            }
            func email(_ address: String) async throws -> HeraldClient.Answer {
                try await client.post(
                    Paths.v1 + "sendOobCode", apiKey: key,
                    json: ["requestType": "EMAIL_SIGNIN", "email": address, "continueUrl": EmailLinkTests.continueURL])
            }
            func tally(_ answer: HeraldClient.Answer) {
                if answer.status == 200 {
                    passed += 1
                } else {
                    #expect(answer.errorMessage?.hasPrefix("QUOTA_EXCEEDED") == true, "\(answer.errorMessage ?? "")")
                }
            }
            let started = Date()
            // Email sends alone first: leases cover them, and the same address again is refused by its own
            // limit, giving back the project's token.
            for index in 0..<300 {
                let first = try await email("user\(index)@example.com")
                tally(first)
                if index.isMultiple(of: 2), first.status == 200 {
                    #expect(try await email("user\(index)@example.com").errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
                }
                if try await charged() > passed { leasedAhead = true }
            }
            #expect(leasedAhead, "no lease took email sends' project tokens ahead")
            // Then SMS sends spend the rest of the same allowance.
            for index in 0..<400 { tally(try await client.post(send, apiKey: key, json: ["phoneNumber": "+1555558" + String(1000 + index)])) }
            try await Task.sleep(for: .milliseconds(1200))
            for index in 0..<40 { tally(try await client.post(send, apiKey: key, json: ["phoneNumber": "+1555559" + String(1000 + index)])) }
            let refills = Int(Date().timeIntervalSince(started) * 1_000_000) / Int(interval) + 1
            #expect((640...(640 + refills)).contains(passed), "\(passed) sends passed a 640/1h project limit")
            #expect(harness.publisher.jobs(.email).count + harness.publishedJobs().count == passed)
            #expect(harness.logs.text.contains("limit=limits.perEmail"))
            #expect(harness.logs.text.contains("limit=limits.perProject"))
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

extension RouterHarness {
    /// How many events a limit row has been charged for that time has not yet paid back (0 without a
    /// row): more than the sends that passed means a lease took tokens ahead.
    func charged(kind: String, subject: String, policy: String) async throws -> Int {
        let interval = GCRA.Parameters(RatePolicy.parse(policy)!).interval
        guard let tat = try await store.rateStates(kind: kind, subject: subject, project: nil).first?.tat else { return 0 }
        return Int((tat - clock.now.microsecondsSince1970 + interval - 1) / interval)
    }
}
