import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// What the phone guide asks of a signed-in user's account: linking and changing the number,
/// re-authentication, the recent-login rule, and Firebase's refusal of a phone first factor on an
/// account with an SMS second factor. Request shapes as the iOS SDK sends them (`operation` always set).
@Suite("Phone linking, number changes, re-authentication and recent login over the wire (real broker, real SQLite)")
struct PhoneAccountTests {
    static let key = TestConfiguration.apiKey
    static let first = SecurityTests.testNumber
    static let second = "+16505550101"

    static func harness() throws -> APIHarness {
        try APIHarness { $0.testNumbers[second] = "111111" }
    }

    /// A session for `number` (a test number: fixed code, no SMS).
    static func session(_ client: HeraldClient, _ number: String) async throws -> String {
        let sent = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": number])
        return try #require(sent.string("sessionInfo"), "\(sent.errorMessage ?? "")")
    }

    static func code(_ number: String) -> String { number == first ? "654321" : "111111" }

    /// signInWithPhoneNumber with a fresh session for `number`, as iOS sends it.
    static func verify(
        _ client: HeraldClient, _ number: String, operation: String = "SIGN_UP_OR_IN", idToken: String? = nil
    ) async throws -> HeraldClient.Answer {
        var body: [String: any Sendable] = [
            "sessionInfo": try await session(client, number), "code": code(number), "operation": operation,
        ]
        if let idToken { body["idToken"] = idToken }
        return try await client.post(Paths.legacy + "verifyPhoneNumber", apiKey: key, json: body)
    }

    static func phoneOf(_ client: HeraldClient, _ idToken: String?) async throws -> String? {
        let lookup = try await SecurityTests.lookup(client, try #require(idToken))
        return (lookup.json["users"] as? [[String: Any]])?.first?["phoneNumber"] as? String
    }

    @Test("linking a number to a signed-in user; another account's number gets a temporaryProof that signs in to that account")
    func linking() async throws {
        let harness = try Self.harness()
        try await harness.run { client, admin in
            let erin = try await SecurityTests.emailSignIn("erin@example.com", harness: harness, client: client, admin: admin)
            let erinToken = try #require(erin.string("idToken"))
            let linked = try await Self.verify(client, Self.second, operation: "LINK", idToken: erinToken)
            #expect(linked.status == 200, "\(linked.errorMessage ?? "")")
            #expect(linked.string("localId") == erin.string("localId") && linked.json["isNewUser"] as? Bool == false)
            #expect(try await Self.phoneOf(client, linked.string("idToken")) == Self.second)
            let claims = AppleSignInTests.claims(linked.string("idToken"))
            #expect((claims["firebase"] as? [String: Any])?["sign_in_provider"] as? String == "password", "the session keeps its provider")

            // The first number belongs to a phone user; Erin trying to link it gets a proof, no tokens.
            let holder = try await SecurityTests.phoneSignIn(client)
            let linkedToken = try #require(linked.string("idToken"))
            let refused = try await Self.verify(client, Self.first, operation: "LINK", idToken: linkedToken)
            #expect(refused.status == 200)
            #expect(refused.string("idToken") == nil && refused.string("localId") == nil)
            #expect(refused.string("phoneNumber") == Self.first && refused.string("temporaryProofExpiresIn") == "3600")
            let proof = try #require(refused.string("temporaryProof"))
            let replay = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key,
                json: ["temporaryProof": proof, "phoneNumber": Self.first, "idToken": try #require(linked.string("idToken"))])
            #expect(replay.errorMessage == "PHONE_NUMBER_EXISTS")
            let other = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key, json: ["temporaryProof": proof, "phoneNumber": "+1 650-555-3434"])
            #expect(other.status == 200, "\(other.errorMessage ?? "")")
            #expect(other.string("localId") == holder.string("localId"), "the proof signs in to the account that holds the number")
            let again = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key, json: ["temporaryProof": proof, "phoneNumber": Self.first])
            #expect(again.errorMessage == "INVALID_TEMPORARY_PROOF", "a proof signs in once")
            for (proofText, number) in [("forged", Self.first), (proof, Self.second)] {
                let bad = try await client.post(
                    Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key, json: ["temporaryProof": proofText, "phoneNumber": number])
                #expect(bad.errorMessage == "INVALID_TEMPORARY_PROOF")
            }
            let noNumber = try await client.post(Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key, json: ["temporaryProof": proof])
            #expect(noNumber.errorMessage == "MISSING_PHONE_NUMBER")
        }
    }

    @Test("a temporaryProof is bound to the account that held the number: refused once its sessions were revoked or the number moved")
    func proofBinding() async throws {
        let harness = try Self.harness()
        try await harness.run { client, admin in
            let holder = try await SecurityTests.phoneSignIn(client)
            let holderID = try #require(holder.string("localId"))
            let erin = try await SecurityTests.emailSignIn("erin@example.com", harness: harness, client: client, admin: admin)
            let erinToken = try #require(erin.string("idToken"))
            func proof() async throws -> String {
                let refused = try await Self.verify(client, Self.first, operation: "LINK", idToken: erinToken)
                return try #require(refused.string("temporaryProof"), "\(refused.errorMessage ?? "")")
            }
            func use(_ proof: String) async throws -> HeraldClient.Answer {
                try await client.post(
                    Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key, json: ["temporaryProof": proof, "phoneNumber": Self.first])
            }
            func adminUpdate(_ fields: [String: any Sendable]) async throws {
                var body = fields
                body["localId"] = holderID
                let updated = try await client.post(
                    SecurityTests.adminBase + "/accounts:update", json: body, headers: TestConfiguration.adminHeader)
                #expect(updated.status == 200, "\(updated.errorMessage ?? "")")
            }
            let beforeRevocation = try await proof()
            // firebase-admin's revoke_refresh_tokens moves the holder's validSince.
            try await adminUpdate(["validSince": String(Int(Date().timeIntervalSince1970) + 1)])
            #expect(try await use(beforeRevocation).errorMessage == "INVALID_TEMPORARY_PROOF")
            let afterRevocation = try await proof()
            // The holder gives the number up, and a new account takes it.
            try await adminUpdate(["deleteProvider": ["phone"]])
            let newcomer = try await SecurityTests.phoneSignIn(client)
            #expect(newcomer.string("localId") != holderID && newcomer.json["isNewUser"] as? Bool == true)
            #expect(try await use(afterRevocation).errorMessage == "INVALID_TEMPORARY_PROOF", "the number moved to another account")
            // A proof issued now is bound to the new holder and signs in to it.
            let signedIn = try await use(try await proof())
            #expect(signedIn.string("localId") == newcomer.string("localId"), "\(signedIn.errorMessage ?? "")")
        }
    }

    @Test("updatePhoneNumber (operation UPDATE) replaces the number and revokes older sessions; LINK over another number is refused; unlinking phone")
    func changeAndUnlink() async throws {
        let harness = try Self.harness()
        try await harness.run { client, _ in
            let user = try await SecurityTests.phoneSignIn(client)
            let token = try #require(user.string("idToken"))
            let link = try await Self.verify(client, Self.second, operation: "LINK", idToken: token)
            #expect(link.errorMessage == "PROVIDER_ALREADY_LINKED")
            let updated = try await Self.verify(client, Self.second, operation: "UPDATE", idToken: token)
            #expect(updated.status == 200, "\(updated.errorMessage ?? "")")
            #expect(updated.string("localId") == user.string("localId"))
            let fresh = try #require(updated.string("idToken"))
            #expect(try await Self.phoneOf(client, fresh) == Self.second)
            #expect((try await SecurityTests.lookup(client, token)).errorMessage == "TOKEN_EXPIRED", "changing the number ends older sessions")
            // The old number is free again: signing in with it makes a new user.
            let newcomer = try await SecurityTests.phoneSignIn(client)
            #expect(newcomer.string("localId") != user.string("localId") && newcomer.json["isNewUser"] as? Bool == true)

            let unlinked = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": fresh, "deleteProvider": ["phone"]])
            #expect(unlinked.status == 200, "\(unlinked.errorMessage ?? "")")
            #expect(try await Self.phoneOf(client, unlinked.string("idToken")) == nil)
        }
    }

    @Test("REAUTH never creates a user and signs in only the number's holder, with a fresh auth_time")
    func reauthentication() async throws {
        let harness = try Self.harness()
        try await harness.run { client, _ in
            let unknown = try await Self.verify(client, Self.second, operation: "REAUTH")
            #expect(unknown.errorMessage == "USER_NOT_FOUND")
            let users = try await client.get(SecurityTests.adminBase + "/accounts:batchGet", headers: TestConfiguration.adminHeader)
            #expect(users.json["users"] == nil, "no account was created")

            let user = try await SecurityTests.phoneSignIn(client)
            harness.clock.advance(400)
            let again = try await Self.verify(client, Self.first, operation: "REAUTH")
            #expect(again.status == 200, "\(again.errorMessage ?? "")")
            #expect(again.string("localId") == user.string("localId") && again.json["isNewUser"] as? Bool == false)
            let before = AppleSignInTests.claims(user.string("idToken"))["auth_time"] as? Int ?? 0
            let after = AppleSignInTests.claims(again.string("idToken"))["auth_time"] as? Int ?? 0
            #expect(after - before >= 400)
        }
    }

    @Test(
        "sensitive changes need a recent sign-in: CREDENTIAL_TOO_OLD_LOGIN_AGAIN after tokens.recentLogin, also with a refreshed token; re-authenticating fixes it"
    )
    func recentLogin() async throws {
        let harness = try Self.harness()
        try await harness.run { client, admin in
            let user = try await SecurityTests.emailSignIn("gina@example.com", harness: harness, client: client, admin: admin)
            var token = try #require(user.string("idToken"))
            // Within five minutes everything is allowed; a name change always is.
            harness.clock.advance(301)
            let refreshed = try await SecurityTests.refresh(client, try #require(user.string("refreshToken")))
            token = try #require(refreshed.string("id_token"), "\(refreshed.errorMessage ?? "")")
            let tooOld = "CREDENTIAL_TOO_OLD_LOGIN_AGAIN"
            #expect(try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": token, "displayName": "Gina"]).status == 200)
            #expect(
                try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": token, "password": "correct horse"]).errorMessage
                    == tooOld)
            #expect(
                try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": token, "deleteProvider": ["password"]])
                    .errorMessage == tooOld)
            #expect(try await client.post(Paths.v1 + "delete", apiKey: Self.key, json: ["idToken": token]).errorMessage == tooOld)
            let enroll = try await client.post(
                "/v2/accounts/mfaEnrollment:start", apiKey: Self.key,
                json: ["idToken": token, "phoneEnrollmentInfo": ["phoneNumber": Self.second]])
            #expect(enroll.errorMessage == tooOld)
            let withdraw = try await client.post(
                "/v2/accounts/mfaEnrollment:withdraw", apiKey: Self.key, json: ["idToken": token, "mfaEnrollmentId": "x"])
            #expect(withdraw.errorMessage == tooOld)
            // Linking another address with an email link replaces the account's email: also sensitive.
            let newAddress = try await SecurityTests.emailSignIn(
                "gina.new@example.com", harness: harness, client: client, admin: admin, idToken: token)
            #expect(newAddress.errorMessage == tooOld)

            // Re-authenticating (a new email link) gives a recent sign-in again.
            let again = try await SecurityTests.emailSignIn("gina@example.com", harness: harness, client: client, admin: admin)
            let deleted = try await client.post(Paths.v1 + "delete", apiKey: Self.key, json: ["idToken": try #require(again.string("idToken"))])
            #expect(deleted.status == 200, "\(deleted.errorMessage ?? "")")
        }
    }

    @Test("a number that is the first factor of an account with an SMS second factor: UNSUPPORTED_FIRST_FACTOR at send time and at sign-in")
    func phoneFirstFactorOnMFAUser() async throws {
        let harness = try Self.harness()
        try await harness.run { client, _ in
            let user = try await SecurityTests.phoneSignIn(client)
            let pending = try await Self.session(client, Self.first)
            let localID = try #require(user.string("localId"))
            try await harness.withStore {
                try await $0.addMFAEnrollment(
                    MFAEnrollment(enrollmentID: "factor", phoneNumber: "+15555550123", displayName: nil, enrolledAt: Date()),
                    projectID: TestConfiguration.projectID, localID: localID)
            }
            let text = "UNSUPPORTED_FIRST_FACTOR : A phone number cannot be set as a first factor on an SMS based MFA user."
            let send = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: Self.key, json: ["phoneNumber": Self.first])
            #expect(send.errorMessage == text)
            let signIn = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key, json: ["sessionInfo": pending, "code": "654321", "operation": "SIGN_UP_OR_IN"])
            #expect(signIn.errorMessage == text)
            #expect(signIn.string("mfaPendingCredential") == nil)
        }
    }

    @Test("a resend leaves the older session valid with its own code until one of them signs in, which closes the other")
    func sessionsAcrossResends() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let number = "+15555550142"
            var sessions: [String] = []
            for _ in 0..<2 {
                let sent = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: Self.key, json: ["phoneNumber": number])
                sessions.append(try #require(sent.string("sessionInfo"), "\(sent.errorMessage ?? "")"))
            }
            let jobs = try await harness.publishedJobs(admin)
            try #require(jobs.count == 2)
            let codes = try jobs.map { try harness.code(in: $0.1) }
            // The verification ID an app kept across a restart: the older session, with the older code.
            let older = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key,
                json: ["sessionInfo": sessions[0], "code": codes[0], "operation": "SIGN_UP_OR_IN"])
            #expect(older.status == 200, "\(older.errorMessage ?? "")")
            let newer = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key,
                json: ["sessionInfo": sessions[1], "code": codes[1], "operation": "SIGN_UP_OR_IN"])
            #expect(newer.status == 400, "the sign-in closed the number's other session")
            #expect(newer.string("idToken") == nil)
        }
    }

    @Test("test numbers: no app credential needed in the SDK's testing mode; a test number never signs into an account a real SMS proved")
    func testNumbers() async throws {
        let harness = try APIHarness { $0.appVerification = "{required: true}" }
        try await harness.run { client, admin in
            // Testing mode sends no credential: fine for a test number, MISSING_APP_CREDENTIAL for a real one.
            let test = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: Self.key, json: ["phoneNumber": Self.first])
            #expect(test.status == 200, "\(test.errorMessage ?? "")")
            let real = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: Self.key, json: ["phoneNumber": "+15555550177"])
            #expect(real.errorMessage == "MISSING_APP_CREDENTIAL")
            // A credential a test-number send does carry is still checked.
            let forged = try await client.post(
                Paths.v1 + "sendVerificationCode", apiKey: Self.key,
                json: ["phoneNumber": Self.first, "iosReceipt": "forged", "iosSecret": "forged"])
            #expect(forged.errorMessage == "INVALID_APP_CREDENTIAL")
            #expect(try await harness.publishedJobs(admin).isEmpty, "a test number never sends an SMS")

            // An admin-made account on the test number: the fixed code signs in to it.
            let created = try await client.post(
                SecurityTests.adminBase + "/accounts", json: ["phoneNumber": Self.first], headers: TestConfiguration.adminHeader)
            let signedIn = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key,
                json: ["sessionInfo": try #require(test.string("sessionInfo")), "code": "654321"])
            #expect(signedIn.string("localId") == created.string("localId"), "\(signedIn.errorMessage ?? "")")
            // A real person signed up with the number before it became a test number: the fixed code is refused.
            try await harness.withStore { store in
                var user = try #require(try await store.user(projectID: TestConfiguration.projectID, phoneNumber: Self.first))
                #expect(user.phoneProven == false)
                user.phoneProven = true
                try await store.updateUser(user)
            }
            for operation in ["SIGN_UP_OR_IN", "REAUTH"] {
                let refused = try await client.post(
                    Paths.v1 + "signInWithPhoneNumber", apiKey: Self.key,
                    json: ["sessionInfo": try await Self.session(client, Self.first), "code": "654321", "operation": operation])
                #expect(refused.errorMessage?.hasPrefix("OPERATION_NOT_ALLOWED : This test number belongs to an account a real SMS verified") == true)
                #expect(refused.string("idToken") == nil)
            }
        }
    }
}
