import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Testing

/// App verification on the wire: the silent-push handshake's first half (receipts, push jobs), iOS
/// credentials and captcha on sends, reentrant sends, recaptchaConfig.
@Suite("App verification over the Identity Toolkit wire (real broker, real SQLite)")
struct AppVerificationTests {
    let key = TestConfiguration.apiKey
    static let bundle = ("X-Ios-Bundle-Identifier", "com.example.herald")
    static let device = "0A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F9"

    /// Runs verifyClient and returns (receipt, secret from the published push).
    static func handshake(_ harness: APIHarness, _ client: HeraldClient, _ admin: AMQPConnection, device: String = device) async throws -> (
        String, String
    ) {
        let answer = try await client.post(
            Paths.v1 + "verifyIosClient", apiKey: TestConfiguration.apiKey, json: ["appToken": device, "isSandbox": true], headers: [bundle])
        guard answer.status == 200, let receipt = answer.string("receipt") else {
            throw TestFailure("verifyIosClient: \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        let jobs = try await harness.publishedPushJobs(admin)
        guard let job = jobs.last?.1 else { throw TestFailure("no push job") }
        return (receipt, try harness.secret(in: job))
    }

    @Test("push.provider none: verifyClient answers INVALID_APP_CREDENTIAL (the SDK's cue for reCAPTCHA) and queues nothing")
    func noPush() async throws {
        let harness = try APIHarness {
            $0.appVerification = "{required: true}"
            $0.pushProvider = "none"
        }
        try await harness.run { client, admin in
            for path in [Paths.v1 + "verifyIosClient", Paths.legacy + "verifyClient"] {
                let answer = try await client.post(path, apiKey: key, json: ["appToken": Self.device, "isSandbox": true], headers: [Self.bundle])
                #expect(answer.status == 400, "\(path)")
                #expect(answer.errorMessage == "INVALID_APP_CREDENTIAL", "\(path)")
            }
            #expect(Topology.types(in: harness.configuration) == [.sms, .email])
            await #expect(throws: (any Error).self, "no push queue is even declared") { try await harness.publishedPushJobs(admin) }
        }
    }

    @Test("verifyIosClient and legacy verifyClient: receipt + suggestedTimeout once the push job is confirmed")
    func verifyClient() async throws {
        let harness = try APIHarness { $0.appVerification = "{required: true, suggestedTimeout: 8s, pushTTL: 2m}" }
        try await harness.run { client, admin in
            var secrets: [String] = []
            for path in [Paths.v1 + "verifyIosClient", Paths.legacy + "verifyClient"] {
                let answer = try await client.post(path, apiKey: key, json: ["appToken": Self.device, "isSandbox": true], headers: [Self.bundle])
                #expect(answer.status == 200, "\(path)")
                let receipt = try #require(answer.string("receipt"))
                #expect(answer.string("suggestedTimeout") == "8")
                #expect(answer.json.count == 2)
                let jobs = try await harness.publishedPushJobs(admin)
                try #require(jobs.count == 1)
                let (delivery, job) = jobs[0]
                #expect(delivery.type == "push")
                #expect(job.expiresAt.timeIntervalSince(job.createdAt) == 120)
                guard case .push(let message) = job.payload else {
                    Issue.record("not a push job")
                    return
                }
                #expect(message.deviceToken == Self.device.lowercased())
                #expect(message.environment == .sandbox)
                #expect(message.topic == "com.example.herald")
                #expect(message.payload["receipt"] == receipt)
                let secret = try harness.secret(in: job)
                secrets.append(secret)
                #expect(secret.count >= 40)
                // The broker holds the sealed secret only.
                #expect(String(decoding: delivery.body, as: UTF8.self).contains(secret) == false)
            }
            // isSandbox false or absent: production.
            _ = try await client.post(
                Paths.v1 + "verifyIosClient", apiKey: key, json: ["appToken": String(repeating: "ab", count: 32)], headers: [Self.bundle])
            guard case .push(let message) = try await harness.publishedPushJobs(admin).first?.1.payload else {
                Issue.record("no job")
                return
            }
            #expect(message.environment == .production)
            #expect(linesLeaking(secrets, in: harness.logs.text).isEmpty)
        }
    }

    @Test("verifyClient errors the SDK understands; nothing is published for them")
    func verifyClientErrors() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let path = Paths.v1 + "verifyIosClient"
            let missingToken = try await client.post(path, apiKey: key, json: ["isSandbox": true], headers: [Self.bundle])
            #expect(missingToken.status == 400)
            #expect(missingToken.errorMessage == "MISSING_IOS_APP_TOKEN")
            let missingBundle = try await client.post(path, apiKey: key, json: ["appToken": Self.device])
            #expect(missingBundle.errorMessage == "MISSING_IOS_BUNDLE_ID")
            let otherBundle = try await client.post(
                path, apiKey: key, json: ["appToken": Self.device], headers: [("X-Ios-Bundle-Identifier", "com.evil.app")])
            #expect(otherBundle.errorMessage == "INVALID_APP_CREDENTIAL")
            let notHex = try await client.post(path, apiKey: key, json: ["appToken": "not-a-device-token"], headers: [Self.bundle])
            #expect(notHex.errorMessage == "INVALID_APP_CREDENTIAL")
            let legacy = try await client.post(Paths.legacy + "verifyClient", apiKey: key, json: [:], headers: [Self.bundle])
            #expect(legacy.errorMessage == "MISSING_IOS_APP_TOKEN")
            #expect(try await harness.publishedPushJobs(admin).isEmpty)

            // A device token APNs declared dead: the SDK falls back to reCAPTCHA on this answer.
            try await harness.withStore {
                try await $0.markDeviceTokenInvalid(hash: SHA256Hex.digest(Self.device.lowercased()), reason: "Unregistered", since: Date())
            }
            let dead = try await client.post(path, apiKey: key, json: ["appToken": Self.device], headers: [Self.bundle])
            #expect(dead.errorMessage == "INVALID_APP_CREDENTIAL")
            #expect(try await harness.publishedPushJobs(admin).isEmpty)
        }
    }

    @Test("pushes per device are limited (limits.pushesPerDevice)")
    func pushLimit() async throws {
        let harness = try APIHarness { $0.limits = "{perIP: [\"1000/1m\"], pushesPerDevice: [\"2/1h\"], pumping: {enabled: false}}" }
        try await harness.run { client, admin in
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(
                    try await client.post(Paths.v1 + "verifyIosClient", apiKey: key, json: ["appToken": Self.device], headers: [Self.bundle]).status)
            }
            #expect(statuses == [200, 200, 400])
            let refused = try await client.post(Paths.v1 + "verifyIosClient", apiKey: key, json: ["appToken": Self.device], headers: [Self.bundle])
            #expect(refused.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(refused.header("retry-after") != nil)
            #expect(try await harness.publishedPushJobs(admin).count == 2)
        }
    }

    @Test("sends need an app credential: the receipt/secret pair is accepted and reused within receiptTTL, refused otherwise")
    func iosReceipts() async throws {
        let harness = try APIHarness { $0.appVerification = "{required: true, receiptTTL: 10m}" }
        try await harness.run { client, admin in
            let send = Paths.v1 + "sendVerificationCode"
            let none = try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"], headers: [Self.bundle])
            #expect(none.status == 400)
            #expect(none.errorMessage == "MISSING_APP_CREDENTIAL")

            let (receipt, secret) = try await Self.handshake(harness, client, admin)
            let half = try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100", "iosReceipt": receipt], headers: [Self.bundle])
            #expect(half.errorMessage == "INVALID_APP_CREDENTIAL")
            let wrong = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550100", "iosReceipt": receipt, "iosSecret": secret + "x"], headers: [Self.bundle])
            #expect(wrong.errorMessage == "INVALID_APP_CREDENTIAL")
            let unknown = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550100", "iosReceipt": "forged", "iosSecret": secret], headers: [Self.bundle])
            #expect(unknown.errorMessage == "INVALID_APP_CREDENTIAL")
            let otherApp = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550100", "iosReceipt": receipt, "iosSecret": secret],
                headers: [("X-Ios-Bundle-Identifier", "com.example.other")])
            #expect(otherApp.errorMessage == "INVALID_APP_CREDENTIAL")
            #expect(try await harness.publishedJobs(admin).isEmpty)

            // The SDK caches the pair and sends it with every later send.
            for phone in ["+15555550100", "+15555550101"] {
                let ok = try await client.post(
                    send, apiKey: key, json: ["phoneNumber": phone, "iosReceipt": receipt, "iosSecret": secret], headers: [Self.bundle])
                #expect(ok.status == 200, "\(String(decoding: ok.body, as: UTF8.self))")
            }
            #expect(try await harness.publishedJobs(admin).count == 2)

            harness.clock.advance(10 * 60 + 1)
            let expired = try await client.post(
                send, apiKey: key, json: ["phoneNumber": "+15555550102", "iosReceipt": receipt, "iosSecret": secret], headers: [Self.bundle])
            #expect(expired.errorMessage == "INVALID_APP_CREDENTIAL")
            #expect(try await harness.publishedJobs(admin).isEmpty)
            #expect(linesLeaking([receipt, secret], in: harness.logs.text).isEmpty)
        }
    }

    @Test("test numbers: no credential (the SDKs' testing mode) always passes; a credential they carry is checked unless disabledForTesting")
    func testNumbers() async throws {
        for (disabledForTesting, forgedStatus) in [(true, 200), (false, 400)] {
            let harness = try APIHarness { $0.appVerification = "{required: true, disabledForTesting: \(disabledForTesting)}" }
            try await harness.run { client, _ in
                let bare = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+16505553434"])
                #expect(bare.status == 200, "\(bare.errorMessage ?? "")")
                let forged = try await client.post(
                    Paths.v1 + "sendVerificationCode", apiKey: key,
                    json: ["phoneNumber": "+16505553434", "iosReceipt": "forged", "iosSecret": "forged"])
                #expect(forged.status == forgedStatus)
                if forgedStatus == 400 { #expect(forged.errorMessage == "INVALID_APP_CREDENTIAL") }
            }
        }
    }

    @Test("captcha: siteverify success passes; failure and a score below minScore are CAPTCHA_CHECK_FAILED; no score passes")
    func captcha() async throws {
        let siteverify = try await FakeSiteverify.start(
            secret: "captcha-secret",
            verdicts: [
                "good": .init(success: true, score: 0.9), "bad": .init(success: false, errorCodes: ["timeout-or-duplicate"]),
                "low": .init(success: true, score: 0.3), "turnstile": .init(success: true),
            ])
        defer { Task { await siteverify.stop() } }
        let harness = try APIHarness {
            $0.appVerification = "{required: true, captcha: {verifyUrl: \"\(siteverify.url)\", secret: captcha-secret, minScore: 0.5}}"
        }
        try await harness.run { client, admin in
            let send = Paths.v1 + "sendVerificationCode"
            var outcomes: [String: String] = [:]
            for (index, token) in ["good", "bad", "low", "turnstile", "unknown"].enumerated() {
                let answer = try await client.post(send, apiKey: key, json: ["phoneNumber": "+1555555020\(index)", "recaptchaToken": token])
                outcomes[token] = answer.status == 200 ? "ok" : answer.errorMessage ?? "\(answer.status)"
            }
            #expect(
                outcomes == [
                    "good": "ok", "bad": "CAPTCHA_CHECK_FAILED", "low": "CAPTCHA_CHECK_FAILED", "turnstile": "ok", "unknown": "CAPTCHA_CHECK_FAILED",
                ])
            // reCAPTCHA Enterprise field name.
            let enterprise = try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550300", "captchaResponse": "good"])
            #expect(enterprise.status == 200)
            #expect(try await harness.publishedJobs(admin).count == 3)
            let form = try #require(siteverify.received.first)
            #expect(form["secret"] == "captcha-secret")
            #expect(form["response"] == "good")
            #expect(form["remoteip"] == "127.0.0.1")
            #expect(linesLeaking(["captcha-secret"], in: harness.logs.text).isEmpty)
        }
    }

    @Test("siteverify unreachable: 503 with Retry-After, nothing sent; a project without captcha settings refuses tokens")
    func captchaUnavailable() async throws {
        let harness = try APIHarness {
            $0.appVerification = "{required: true, captcha: {verifyUrl: \"http://127.0.0.1:\(freePort())/siteverify\", secret: s}}"
        }
        try await harness.run { client, admin in
            let answer = try await client.post(
                Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100", "recaptchaToken": "t"])
            #expect(answer.status == 503)
            #expect(answer.errorMessage?.hasPrefix("UNAVAILABLE") == true)
            #expect(answer.header("retry-after") == "5")
            #expect(try await harness.publishedJobs(admin).isEmpty)
        }
        let unconfigured = try APIHarness { $0.appVerification = "{required: true}" }
        try await unconfigured.run { client, _ in
            let answer = try await client.post(
                Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100", "recaptchaToken": "t"])
            #expect(answer.errorMessage?.hasPrefix("CAPTCHA_CHECK_FAILED") == true)
        }
    }

    @Test(
        "reentrant send: within resendAfter the same sessionInfo and nothing published; after it a new code, both sessions valid until one signs in"
    )
    func reentrant() async throws {
        let harness = try APIHarness {
            $0.resendAfter = "30s"
            $0.appVerification = "{required: true}"
        }
        try await harness.run { client, admin in
            let (receipt, secret) = try await Self.handshake(harness, client, admin)
            let send = Paths.v1 + "sendVerificationCode"
            func post(_ number: String) async throws -> HeraldClient.Answer {
                try await client.post(
                    send, apiKey: key, json: ["phoneNumber": number, "iosReceipt": receipt, "iosSecret": secret], headers: [Self.bundle])
            }
            let first = try #require(try await post("+15555550100").string("sessionInfo"))
            harness.clock.advance(10)
            let again = try await post("+15555550100")
            #expect(again.string("sessionInfo") == first)
            let jobs = try await harness.publishedJobs(admin)
            try #require(jobs.count == 1)
            let oldCode = try harness.code(in: jobs[0].1)

            // Another number is not affected.
            let other = try await post("+15555550101")
            #expect(other.string("sessionInfo") != first)
            _ = try await harness.publishedJobs(admin)

            harness.clock.advance(21)
            let second = try #require(try await post("+15555550100").string("sessionInfo"))
            #expect(second != first)
            let newJobs = try await harness.publishedJobs(admin)
            try #require(newJobs.count == 1)
            let newCode = try harness.code(in: newJobs[0].1)

            // The older code is not wrong but not the new one either: each session checks its own.
            let crossed = try await client.post(Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": first, "code": newCode])
            #expect(crossed.errorMessage == "INVALID_CODE")
            // The verification ID an app kept across a restart still signs in, and closes the newer session.
            let signedIn = try await client.post(Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": first, "code": oldCode])
            #expect(signedIn.status == 200)
            let closed = try await client.post(Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": second, "code": newCode])
            #expect(closed.errorMessage == "INVALID_SESSION_INFO")
            #expect(linesLeaking([first, second, oldCode, newCode], in: harness.logs.text).isEmpty)
        }
    }

    @Test("without an app credential the client address alone never hands back an open session")
    func noReentrancyByAddress() async throws {
        let harness = try APIHarness {
            $0.resendAfter = "30s"
            $0.trustedProxies = ["127.0.0.1/32"]
        }
        try await harness.run { client, admin in
            let send = Paths.v1 + "sendVerificationCode"
            // Two people behind one carrier NAT, or anyone behind an untrusted proxy: one address.
            func post() async throws -> String? {
                try await client.post(send, apiKey: key, json: ["phoneNumber": "+15555550100"], headers: [("X-Forwarded-For", "203.0.113.5")])
                    .string("sessionInfo")
            }
            let victims = try #require(try await post())
            let attackers = try #require(try await post())
            #expect(attackers != victims)
            #expect(try await harness.publishedJobs(admin).count == 2)
        }
    }

    @Test("a session keeps its sealed sessionInfo only where something can hand it back: not for a send without an app credential, yes in dev mode")
    func sessionInfoKeptOnlyWhenUsable() async throws {
        for devMode in [false, true] {
            let harness = try RouterHarness { $0.devMode = devMode }
            try await harness.run { client in
                let answer = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100"])
                let info = try #require(answer.string("sessionInfo"))
                let sessions = try await harness.store.openSessions(projectID: TestConfiguration.projectID, now: harness.clock.now)
                let session = try #require(sessions.first)
                if devMode {
                    let sealed = try #require(session.sessionInfoSealed)
                    #expect(try Sealer(key: harness.keys.sealing).open(sealed, context: "session:" + session.id) == info)
                } else {
                    #expect(session.sessionInfoSealed == nil)
                }
            }
        }
    }

    @Test("reentrancy follows the app credential across client addresses; another pair from another address gets its own session")
    func reentrantPerCredential() async throws {
        let harness = try APIHarness {
            $0.resendAfter = "30s"
            $0.appVerification = "{required: true}"
            $0.trustedProxies = ["127.0.0.1/32"]
        }
        try await harness.run { client, admin in
            let (receipt, secret) = try await Self.handshake(harness, client, admin)
            let (otherReceipt, otherSecret) = try await Self.handshake(harness, client, admin, device: String(repeating: "cd", count: 32))
            let send = Paths.v1 + "sendVerificationCode"
            func post(_ receipt: String, _ secret: String, from address: String) async throws -> String? {
                try await client.post(
                    send, apiKey: key, json: ["phoneNumber": "+15555550100", "iosReceipt": receipt, "iosSecret": secret],
                    headers: [Self.bundle, ("X-Forwarded-For", address)]
                ).string("sessionInfo")
            }
            let first = try #require(try await post(receipt, secret, from: "203.0.113.5"))
            // Same pair, the phone moved from Wi-Fi to mobile data: still the same client.
            #expect(try await post(receipt, secret, from: "198.51.100.7") == first)
            #expect(try await harness.publishedJobs(admin).count == 1)
            // Another device's pair from another address is someone else: a new code goes out.
            let other = try #require(try await post(otherReceipt, otherSecret, from: "192.0.2.9"))
            #expect(other != first)
            #expect(try await harness.publishedJobs(admin).count == 1)
        }
    }

    @Test("recaptchaConfig: OFF without a site key, ENFORCE with one")
    func recaptchaConfig() async throws {
        let harness = try APIHarness { $0.appVerification = "{required: true, captcha: {siteKey: 6Lc-site-key}}" }
        try await harness.run { client, _ in
            for path in ["/identitytoolkit.googleapis.com/v2/recaptchaConfig", "/v2/recaptchaConfig"] {
                let answer = try await client.get(path + "?key=\(key)&clientType=CLIENT_TYPE_IOS&version=RECAPTCHA_ENTERPRISE")
                #expect(answer.status == 200)
                #expect(answer.string("recaptchaKey") == "projects/\(TestConfiguration.projectID)/keys/6Lc-site-key")
                let states = try #require(answer.json["recaptchaEnforcementState"] as? [[String: String]])
                #expect(states.contains(["provider": "PHONE_PROVIDER", "enforcementState": "ENFORCE"]))
            }
        }
        let off = try APIHarness()
        try await off.run { client, _ in
            let answer = try await client.get("/v2/recaptchaConfig?key=\(key)")
            #expect(answer.string("recaptchaKey") == nil)
            let states = try #require(answer.json["recaptchaEnforcementState"] as? [[String: String]])
            #expect(states.contains(["provider": "PHONE_PROVIDER", "enforcementState": "OFF"]))
        }
    }
}
