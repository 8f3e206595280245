import Foundation
import HeraldAMQP
import HeraldCore
import HeraldTesting
import JWTKit
import Testing

/// The claims a Firebase backend checks in an ID token.
struct VerifiedClaims: JWTPayload {
    struct Firebase: Codable {
        var identities: [String: [String]]
        var sign_in_provider: String
    }
    var iss: IssuerClaim
    var aud: AudienceClaim
    var sub: SubjectClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var user_id: String
    var auth_time: Int
    var phone_number: String
    var firebase: Firebase

    func verify(using algorithm: some JWTAlgorithm) throws { try exp.verifyNotExpired() }
}

@Suite("Phone sign-in over the Identity Toolkit wire (real broker, real SQLite)")
struct PhoneSignInTests {
    let key = TestConfiguration.apiKey

    @Test("send → confirmed job with sealed code → sign in → ID token that verifies against the JWKS → refresh")
    func fullFlow() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let sent = try await client.post(
                Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+1 555-555-0100", "clientType": "CLIENT_TYPE_IOS"],
                headers: [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), ("X-Firebase-Locale", "de")])
            #expect(sent.status == 200)
            let sessionInfo = try #require(sent.string("sessionInfo"))
            #expect(sessionInfo.count >= 40)

            let jobs = try await harness.publishedJobs(admin)
            try #require(jobs.count == 1)
            let (delivery, job) = jobs[0]
            #expect(delivery.messageID == job.id.uuidString.lowercased())
            #expect(delivery.type == "sms")
            #expect(delivery.headers["x-herald-schema"] == .int(1))
            guard case .string(let trace) = delivery.headers["traceparent"] else {
                Issue.record("no traceparent")
                return
            }
            #expect(trace.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
            #expect(job.project == TestConfiguration.projectID)
            #expect(job.locale == "de")
            #expect(abs(job.expiresAt.timeIntervalSince(job.createdAt) - 300) < 1)
            guard case .sms(let message) = job.payload else {
                Issue.record("not sms")
                return
            }
            #expect(message.to == "+15555550100")
            #expect(message.params["app"] == "Herald Test")
            let code = try harness.code(in: job)
            #expect(OneTimeCode.isWellFormed(code, length: 6))
            // The broker only ever holds the sealed code.
            #expect(String(decoding: delivery.body, as: UTF8.self).contains(code) == false)

            let signedIn = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": sessionInfo, "code": code, "operation": "SIGN_UP_OR_IN"])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("expiresIn") == "3600")
            #expect(signedIn.string("phoneNumber") == "+15555550100")
            #expect(signedIn.json["isNewUser"] as? Bool == true)
            let localID = try #require(signedIn.string("localId"))
            #expect(localID.count == 28)
            let idToken = try #require(signedIn.string("idToken"))
            let refreshToken = try #require(signedIn.string("refreshToken"))

            let jwks = try await client.get("/.well-known/jwks.json")
            let verifier = JWTKeyCollection()
            try await verifier.add(jwksJSON: String(decoding: jwks.body, as: UTF8.self))
            let claims = try await verifier.verify(idToken, as: VerifiedClaims.self)
            #expect(claims.iss.value == "https://securetoken.google.com/\(TestConfiguration.projectID)")
            #expect(claims.aud.value == [TestConfiguration.projectID])
            #expect(claims.sub.value == localID)
            #expect(claims.user_id == localID)
            #expect(claims.phone_number == "+15555550100")
            #expect(claims.firebase.sign_in_provider == "phone")
            #expect(claims.firebase.identities["phone"] == ["+15555550100"])
            #expect(abs(claims.exp.value.timeIntervalSince(claims.iat.value) - 3600) < 1)
            // A token signed by another key does not verify.
            #expect(await (try? verifier.verify(idToken.dropLast(4) + "AAAA", as: VerifiedClaims.self)) == nil)

            // The session is spent.
            let again = try await client.post(Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": sessionInfo, "code": code])
            #expect(again.errorMessage == "INVALID_SESSION_INFO")

            for refresh in [
                try await client.post(Paths.token, apiKey: key, json: ["grantType": "refresh_token", "refreshToken": refreshToken]),
                try await client.postForm(Paths.token, apiKey: key, form: "grant_type=refresh_token&refresh_token=\(refreshToken)"),
            ] {
                #expect(refresh.status == 200)
                #expect(refresh.string("access_token")?.isEmpty == false)
                #expect(refresh.string("id_token") == refresh.string("access_token"))
                #expect(refresh.string("expires_in") == "3600")
                #expect(refresh.string("token_type") == "Bearer")
                #expect(refresh.string("user_id") == localID)
                #expect(refresh.string("refresh_token") == refreshToken)
                let refreshed = try await verifier.verify(try #require(refresh.string("id_token")), as: VerifiedClaims.self)
                #expect(refreshed.sub.value == localID)
            }

            // Signing in again finds the same user.
            let second = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100"])
            let secondJob = try await harness.publishedJobs(admin)
            let secondCode = try harness.code(in: try #require(secondJob.first).1)
            let secondSignIn = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key,
                json: ["sessionInfo": try #require(second.string("sessionInfo")), "code": secondCode])
            #expect(secondSignIn.string("localId") == localID)
            #expect(secondSignIn.json["isNewUser"] as? Bool == false)

            let leaks = linesLeaking([code, secondCode, message.params["codeSealed"]!, sessionInfo, refreshToken], in: harness.logs.text)
            #expect(leaks.isEmpty, "secrets in logs: \(leaks)")
            #expect(harness.logs.text.contains("verification code queued"))
        }
    }

    @Test("legacy relyingparty paths and the short /v1 family give the same results")
    func legacyPaths() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let sent = try await client.post(Paths.legacy + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+447911123456"])
            #expect(sent.status == 200)
            let code = try harness.code(in: try #require(try await harness.publishedJobs(admin).first).1)
            let signedIn = try await client.post(
                Paths.legacy + "verifyPhoneNumber", apiKey: key,
                json: ["sessionInfo": try #require(sent.string("sessionInfo")), "code": code, "operation": "SIGN_UP_OR_IN"])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("phoneNumber") == "+447911123456")

            let short = try await client.post(
                Paths.shortV1 + "sendVerificationCode", json: ["phoneNumber": "+447911123456"], headers: [("x-goog-api-key", key)])
            #expect(short.status == 200)
            let shortCode = try harness.code(in: try #require(try await harness.publishedJobs(admin).first).1)
            let shortSignIn = try await client.post(
                Paths.shortV1 + "signInWithPhoneNumber", apiKey: key,
                json: ["session_info": try #require(short.string("sessionInfo")), "code": shortCode])
            #expect(shortSignIn.string("localId") == signedIn.string("localId"))
        }
    }

    @Test("test numbers sign in with their fixed code and publish nothing")
    func testNumbers() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let sent = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+1 650-555-3434"])
            #expect(sent.status == 200)
            #expect(try await TestBroker.depth(harness.topology.workQueue(.sms), using: admin) == 0)
            let wrong = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": try #require(sent.string("sessionInfo")), "code": "123456"])
            #expect(wrong.errorMessage == "INVALID_CODE")
            let signedIn = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": try #require(sent.string("sessionInfo")), "code": "654321"])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("phoneNumber") == "+16505553434")
        }
    }

    @Test("each wrong code is INVALID_CODE; after maxCheckAttempts even the right code is TOO_MANY_ATTEMPTS_TRY_LATER")
    func burnedSession() async throws {
        let harness = try APIHarness { $0.maxCheckAttempts = 3 }
        try await harness.run { client, admin in
            let sent = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100"])
            let sessionInfo = try #require(sent.string("sessionInfo"))
            let code = try harness.code(in: try #require(try await harness.publishedJobs(admin).first).1)
            let wrongCode = code == "000000" ? "111111" : "000000"
            for _ in 0..<3 {
                let answer = try await client.post(
                    Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": sessionInfo, "code": wrongCode])
                #expect(answer.status == 400)
                #expect(answer.errorMessage == "INVALID_CODE")
            }
            for attempt in [code, wrongCode, code] {
                let answer = try await client.post(
                    Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": sessionInfo, "code": attempt])
                #expect(answer.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            }
        }
    }

    @Test("after codeTTL the session answers SESSION_EXPIRED")
    func expiry() async throws {
        let harness = try APIHarness { $0.codeTTL = "2m" }
        try await harness.run { client, admin in
            let sent = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100"])
            let code = try harness.code(in: try #require(try await harness.publishedJobs(admin).first).1)
            harness.clock.advance(121)
            let answer = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": try #require(sent.string("sessionInfo")), "code": code])
            #expect(answer.errorMessage == "SESSION_EXPIRED")
        }
    }
}
