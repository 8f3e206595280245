import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Phone as a second factor with real processes: herald-api, herald-sms-worker, the fake SMS gateway.
@Suite("Phone second factor end to end (herald-api, herald-sms-worker, fake gateway)")
struct MFAEndToEndTests {
    static let v1 = "/identitytoolkit.googleapis.com/v1/accounts:"
    static let v2 = "/identitytoolkit.googleapis.com/v2/accounts/"
    let key = TestConfiguration.apiKey

    /// Signs `email` in through an email link taken from the devMode oobCodes listing (no mail needed).
    static func emailSignIn(_ stack: StackHarness, _ email: String) async throws -> HeraldClient.Answer {
        let sent = try await stack.client.post(
            v1 + "sendOobCode", apiKey: TestConfiguration.apiKey,
            json: ["requestType": "EMAIL_SIGNIN", "email": email, "continueUrl": "https://app.example.com/"])
        guard sent.status == 200 else { throw TestFailure("sendOobCode: \(sent.errorMessage ?? "")") }
        let listed = try await stack.client.get("/emulator/v1/projects/\(TestConfiguration.projectID)/oobCodes")
        let entries = listed.json["oobCodes"] as? [[String: Any]] ?? []
        guard let code = entries.last(where: { $0["email"] as? String == email })?["oobCode"] as? String else {
            throw TestFailure("no oob code listed")
        }
        return try await stack.client.post(v1 + "signInWithEmailLink", apiKey: TestConfiguration.apiKey, json: ["email": email, "oobCode": code])
    }

    /// The claims of a JWT, unverified (the API tests verify signatures).
    static func claims(_ jwt: String) -> [String: Any] {
        let parts = jwt.split(separator: ".")
        guard parts.count == 3, let data = Data(base64URLEncoded: String(parts[1])) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    @Test("enroll a phone second factor and sign in with it; codes come from the SMS the gateway received")
    func enrollAndSignIn() async throws {
        try await StackHarness.run(configure: { $0.devMode = true }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            let first = try await Self.emailSignIn(stack, "mia@example.com")
            let idToken = try #require(first.string("idToken"))

            let started = try await stack.client.post(
                Self.v2 + "mfaEnrollment:start", apiKey: key,
                json: ["idToken": idToken, "phoneEnrollmentInfo": ["phoneNumber": "+15555550177", "clientType": "CLIENT_TYPE_IOS"]])
            #expect(started.status == 200)
            let enrollSession = try #require((started.json["phoneSessionInfo"] as? [String: Any])?["sessionInfo"] as? String)
            try await stack.waitForGateway(1)
            let enrollSMS = try #require(stack.gateway.received.first)
            #expect(enrollSMS.json?["to"] == "+15555550177")
            // The `mfa` template, not the sign-in one.
            #expect(enrollSMS.text?.contains("is your second-factor code for Herald Test") == true)
            let enrollCode = try #require(StackHarness.code(in: enrollSMS.text))
            // devMode lists the open code as the Auth Emulator's verificationCodes does.
            let listed = try await stack.client.get("/emulator/v1/projects/\(TestConfiguration.projectID)/verificationCodes")
            let codes = try #require(listed.json["verificationCodes"] as? [[String: Any]])
            #expect(codes.count == 1)
            #expect(codes.first?["code"] as? String == enrollCode)
            #expect(codes.first?["sessionInfo"] as? String == enrollSession)
            #expect(codes.first?["phoneNumber"] as? String == "+15555550177")

            // An enrollment code is not a sign-in code.
            let misuse = try await stack.client.post(
                Self.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": enrollSession, "code": enrollCode])
            #expect(misuse.errorMessage == "INVALID_SESSION_INFO")

            let finalized = try await stack.client.post(
                Self.v2 + "mfaEnrollment:finalize", apiKey: key,
                json: ["idToken": idToken, "displayName": "work phone", "phoneVerificationInfo": ["sessionInfo": enrollSession, "code": enrollCode]])
            #expect(finalized.status == 200)
            let enrolledToken = try #require(finalized.string("idToken"))
            let firebase = Self.claims(enrolledToken)["firebase"] as? [String: Any]
            #expect(firebase?["sign_in_second_factor"] as? String == "phone")
            #expect(firebase?["second_factor_identifier"] as? String != nil)

            // The first factor now yields a challenge, not tokens.
            let challenged = try await Self.emailSignIn(stack, "mia@example.com")
            #expect(challenged.status == 200)
            #expect(challenged.json["idToken"] == nil && challenged.json["refreshToken"] == nil)
            let pending = try #require(challenged.string("mfaPendingCredential"))
            let info = try #require((challenged.json["mfaInfo"] as? [[String: Any]])?.first)
            #expect(info["phoneInfo"] as? String == "+*******0177")
            #expect(info["displayName"] as? String == "work phone")
            let enrollmentID = try #require(info["mfaEnrollmentId"] as? String)
            #expect(enrollmentID.count == 28)

            let signInStart = try await stack.client.post(
                Self.v2 + "mfaSignIn:start", apiKey: key,
                json: ["mfaPendingCredential": pending, "mfaEnrollmentId": enrollmentID, "phoneSignInInfo": ["phoneNumber": "+*******0177"]])
            #expect(signInStart.status == 200)
            let signInSession = try #require((signInStart.json["phoneResponseInfo"] as? [String: Any])?["sessionInfo"] as? String)
            try await stack.waitForGateway(2)
            let signInSMS = stack.gateway.received[1]
            #expect(signInSMS.json?["to"] == "+15555550177")
            let signInCode = try #require(StackHarness.code(in: signInSMS.text))

            let wrong = try await stack.client.post(
                Self.v2 + "mfaSignIn:finalize", apiKey: key,
                json: [
                    "mfaPendingCredential": pending,
                    "phoneVerificationInfo": ["sessionInfo": signInSession, "code": signInCode == "000000" ? "111111" : "000000"],
                ])
            #expect(wrong.errorMessage == "INVALID_CODE")
            let done = try await stack.client.post(
                Self.v2 + "mfaSignIn:finalize", apiKey: key,
                json: ["mfaPendingCredential": pending, "phoneVerificationInfo": ["sessionInfo": signInSession, "code": signInCode]])
            #expect(done.status == 200)
            let finalToken = try #require(done.string("idToken"))
            let claims = Self.claims(finalToken)
            #expect(claims["email"] as? String == "mia@example.com")
            #expect((claims["firebase"] as? [String: Any])?["second_factor_identifier"] as? String == enrollmentID)
            #expect((claims["firebase"] as? [String: Any])?["sign_in_provider"] as? String == "password")

            // A refreshed token keeps the second factor.
            let refreshed = try await stack.client.post(
                "/securetoken.googleapis.com/v1/token", apiKey: key,
                json: ["grantType": "refresh_token", "refreshToken": try #require(done.string("refreshToken"))])
            #expect(
                (Self.claims(try #require(refreshed.string("id_token")))["firebase"] as? [String: Any])?["sign_in_second_factor"] as? String
                    == "phone")

            // Withdraw: the next email sign-in gives tokens again.
            let withdrawn = try await stack.client.post(
                Self.v2 + "mfaEnrollment:withdraw", apiKey: key, json: ["idToken": finalToken, "mfaEnrollmentId": enrollmentID])
            #expect(withdrawn.status == 200)
            let again = try #require(try await Self.emailSignIn(stack, "mia@example.com").string("idToken"))

            // devMode's reset drops the project's users, as the Auth Emulator's DELETE …/accounts does.
            let reset = try await stack.client.send(
                "DELETE", "/emulator/v1/projects/\(TestConfiguration.projectID)/accounts", apiKey: nil, body: nil, contentType: nil)
            #expect(reset.status == 200)
            #expect(try await stack.client.post(Self.v1 + "lookup", apiKey: key, json: ["idToken": again]).errorMessage == "USER_NOT_FOUND")
            #expect(linesLeaking([enrollCode, signInCode, pending], in: stack.allOutput).isEmpty)
        }
    }

    @Test("second-factor errors: the reference's exact messages")
    func errors() async throws {
        try await StackHarness.run(configure: { $0.devMode = true }) { stack in
            try await stack.startAPI()
            func post(_ operation: String, _ body: [String: any Sendable], key: String = TestConfiguration.apiKey) async throws -> String? {
                try await stack.client.post(Self.v2 + operation, apiKey: key, json: body).errorMessage
            }
            #expect(
                try await post("mfaSignIn:start", ["mfaEnrollmentId": "x"])
                    == "MISSING_MFA_PENDING_CREDENTIAL : Request does not have MFA pending credential.")
            #expect(
                try await post("mfaSignIn:finalize", ["phoneVerificationInfo": ["sessionInfo": "s", "code": "1"]])
                    == "MISSING_CREDENTIAL : Please set MFA Pending Credential.")
            #expect(
                try await post("mfaSignIn:start", ["mfaPendingCredential": "forged"])
                    == "MISSING_MFA_ENROLLMENT_ID : No second factor identifier is provided.")
            #expect(
                try await post("mfaSignIn:start", ["mfaPendingCredential": "forged", "mfaEnrollmentId": "x"]) == "INVALID_MFA_PENDING_CREDENTIAL")
            #expect(try await post("mfaSignIn:finalize", ["mfaPendingCredential": "forged"]) == "INVALID_ARGUMENT : MFA provider not supported!")
            #expect(try await post("mfaEnrollment:start", [:]) == "MISSING_ID_TOKEN")
            #expect(
                try await post("mfaEnrollment:start", ["idToken": "x"], key: TestConfiguration.disabledAPIKey)
                    == "OPERATION_NOT_ALLOWED : SMS based MFA not enabled.")

            // A phone-only user cannot enroll.
            let phoneSession = try await stack.sendCode(to: "+16505553434")
            let phoneUser = try await stack.client.post(
                Self.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": phoneSession, "code": "654321"])
            let phoneToken = try #require(phoneUser.string("idToken"))
            #expect(
                try await post("mfaEnrollment:start", ["idToken": phoneToken, "phoneEnrollmentInfo": ["phoneNumber": "+15555550100"]])
                    == "UNSUPPORTED_FIRST_FACTOR : MFA is not available for the given first factor.")

            // An admin-created user with an unverified email cannot enroll until it is verified.
            let owner = TestConfiguration.adminHeader
            let base = "/identitytoolkit.googleapis.com/v1/projects/\(TestConfiguration.projectID)"
            let created = try await stack.client.post(base + "/accounts", json: ["email": "olga@example.com"], headers: owner)
            #expect(created.status == 200)
            // An email link verifies the address, so an admin marks it unverified again afterwards.
            let signedIn = try await Self.emailSignIn(stack, "olga@example.com")
            let token = try #require(signedIn.string("idToken"))
            _ = try await stack.client.post(
                base + "/accounts:update", json: ["localId": created.string("localId")!, "emailVerified": false], headers: owner)
            #expect(
                try await post("mfaEnrollment:start", ["idToken": token, "phoneEnrollmentInfo": ["phoneNumber": "+15555550100"]])
                    == "UNVERIFIED_EMAIL : Need to verify email first before enrolling second factors.")
            _ = try await stack.client.post(
                base + "/accounts:update", json: ["localId": created.string("localId")!, "emailVerified": true], headers: owner)
            #expect(try await post("mfaEnrollment:start", ["idToken": token]) == "INVALID_ARGUMENT : ((Missing phoneEnrollmentInfo.))")
            #expect(
                try await post("mfaEnrollment:start", ["idToken": token, "phoneEnrollmentInfo": ["phoneNumber": "12"]])
                    == "INVALID_PHONE_NUMBER : Invalid format.")
            #expect(try await post("mfaEnrollment:finalize", ["idToken": token]) == "INVALID_ARGUMENT : ((Missing phoneVerificationInfo.))")
            #expect(try await post("mfaEnrollment:finalize", ["idToken": token, "phoneVerificationInfo": ["sessionInfo": "s"]]) == "MISSING_CODE")
            #expect(
                try await post("mfaEnrollment:finalize", ["idToken": token, "phoneVerificationInfo": ["code": "123456"]]) == "MISSING_SESSION_INFO")
            #expect(
                try await post("mfaEnrollment:finalize", ["idToken": token, "phoneVerificationInfo": ["sessionInfo": "unknown", "code": "123456"]])
                    == "INVALID_SESSION_INFO")
            #expect(try await post("mfaEnrollment:withdraw", ["idToken": token, "mfaEnrollmentId": "nope"]) == "MFA_ENROLLMENT_NOT_FOUND")

            // Enroll the test number (fixed code, no SMS), then a second enrollment of it is refused.
            let start = try await stack.client.post(
                Self.v2 + "mfaEnrollment:start", apiKey: key, json: ["idToken": token, "phoneEnrollmentInfo": ["phoneNumber": "+16505553434"]])
            let session = try #require((start.json["phoneSessionInfo"] as? [String: Any])?["sessionInfo"] as? String)
            let enrolled = try await stack.client.post(
                Self.v2 + "mfaEnrollment:finalize", apiKey: key,
                json: ["idToken": token, "phoneVerificationInfo": ["sessionInfo": session, "code": "654321"]])
            #expect(enrolled.status == 200)
            // Enrolling revoked the sessions from before: the old token is expired, the new one works.
            #expect(
                try await post("mfaEnrollment:start", ["idToken": token, "phoneEnrollmentInfo": ["phoneNumber": "+15555550199"]]) == "TOKEN_EXPIRED")
            let fresh = try #require(enrolled.string("idToken"))
            #expect(
                try await post("mfaEnrollment:start", ["idToken": fresh, "phoneEnrollmentInfo": ["phoneNumber": "+1 650-555-3434"]])
                    == "SECOND_FACTOR_EXISTS : Phone number already enrolled as second factor for this account.")
            let challenged = try await Self.emailSignIn(stack, "olga@example.com")
            let pending = try #require(challenged.string("mfaPendingCredential"))
            #expect(try await post("mfaSignIn:start", ["mfaPendingCredential": pending, "mfaEnrollmentId": "nope"]) == "MFA_ENROLLMENT_NOT_FOUND")
        }
    }
}
