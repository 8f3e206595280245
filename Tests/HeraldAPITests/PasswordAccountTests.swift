import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Email-and-password accounts over the Identity Toolkit wire, as the iOS SDK and Firebase's REST
/// reference send them: signUp (password, anonymous, linking), signInWithPassword with its limits and
/// enumeration protection, the password policy, and the pre-hijacking rule against a password account.
@Suite("Password accounts over the wire (real broker, real SQLite)")
struct PasswordAccountTests {
    static let key = TestConfiguration.apiKey

    static func signUp(_ client: HeraldClient, _ email: String, _ password: String, path: String = Paths.v1 + "signUp") async throws
        -> HeraldClient.Answer
    {
        try await client.post(path, apiKey: key, json: ["email": email, "password": password, "returnSecureToken": true])
    }

    static func signIn(_ client: HeraldClient, _ email: String, _ password: String, path: String = Paths.v1 + "signInWithPassword")
        async throws -> HeraldClient.Answer
    {
        try await client.post(path, apiKey: key, json: ["email": email, "password": password, "returnSecureToken": true])
    }

    @Test("signUp then signInWithPassword (v1 and legacy): tokens, lookup, createAuthUri, and each refusal's exact text")
    func signUpAndSignIn() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let created = try await Self.signUp(client, " Pat@Example.com ", "secret-1", path: Paths.legacy + "signupNewUser")
            #expect(created.status == 200, "\(created.errorMessage ?? "")")
            #expect(created.string("kind") == "identitytoolkit#SignupNewUserResponse")
            #expect(created.string("email") == "pat@example.com")
            #expect(created.string("expiresIn") == "3600" && created.string("refreshToken") != nil)
            let claims = AppleSignInTests.claims(created.string("idToken"))
            #expect((claims["firebase"] as? [String: Any])?["sign_in_provider"] as? String == "password")

            #expect(try await Self.signUp(client, "pat@example.com", "another-1").errorMessage == "EMAIL_EXISTS")
            #expect(try await Self.signUp(client, "not-an-address", "secret-1").errorMessage == "INVALID_EMAIL")
            #expect(try await client.post(Paths.v1 + "signUp", apiKey: Self.key, json: ["email": "x@example.com"]).errorMessage == "MISSING_PASSWORD")
            #expect(
                try await Self.signUp(client, "short@example.com", "12345").errorMessage
                    == "WEAK_PASSWORD : Password should be at least 6 characters")

            let signedIn = try await Self.signIn(client, "PAT@example.com", "secret-1", path: Paths.legacy + "verifyPassword")
            #expect(signedIn.status == 200, "\(signedIn.errorMessage ?? "")")
            #expect(signedIn.string("kind") == "identitytoolkit#VerifyPasswordResponse")
            #expect(signedIn.string("localId") == created.string("localId") && signedIn.json["registered"] as? Bool == true)
            let lookup = try await SecurityTests.lookup(client, try #require(signedIn.string("idToken")))
            let user = try #require((lookup.json["users"] as? [[String: Any]])?.first)
            #expect(user["email"] as? String == "pat@example.com" && user["emailVerified"] as? Bool == false)
            #expect(user["passwordHash"] == nil, "hashes are never returned")
            #expect(((user["providerUserInfo"] as? [[String: Any]]) ?? []).map { $0["providerId"] as? String } == ["password"])

            let methods = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "pat@example.com", "continueUri": "http://localhost"])
            #expect(methods.json["signinMethods"] as? [String] == ["password"])

            // Enumeration protection is off in this harness: Firebase's separate answers.
            #expect(try await Self.signIn(client, "pat@example.com", "wrong-one").errorMessage == "INVALID_PASSWORD")
            #expect(try await Self.signIn(client, "nobody@example.com", "secret-1").errorMessage == "EMAIL_NOT_FOUND")
            #expect(try await Self.signIn(client, "pat@example.com", String(repeating: "x", count: 5000)).errorMessage == "INVALID_PASSWORD")
            #expect(
                try await client.post(Paths.v1 + "signInWithPassword", apiKey: Self.key, json: ["email": "pat@example.com"]).errorMessage
                    == "MISSING_PASSWORD")
            // The logs never hold a password.
            #expect(harness.logs.text.contains("secret-1") == false && harness.logs.text.contains("wrong-one") == false)
        }
    }

    @Test("with enumeration protection a wrong password and an unknown address answer alike; a disabled user only after its password")
    func enumerationProtection() async throws {
        let harness = try APIHarness {
            $0.emailLink = "{enabled: true, linkTTL: 1h, actionUrl: \"https://auth.example.com/__/auth/action\", enumerationProtection: true}"
        }
        try await harness.run { client, _ in
            let created = try await Self.signUp(client, "kim@example.com", "kims-secret")
            #expect(created.status == 200)
            #expect(try await Self.signIn(client, "kim@example.com", "wrong-secret").errorMessage == "INVALID_LOGIN_CREDENTIALS")
            #expect(try await Self.signIn(client, "nobody@example.com", "wrong-secret").errorMessage == "INVALID_LOGIN_CREDENTIALS")
            let admin = try await client.post(
                Paths.v1 + "update", apiKey: Self.key, json: ["localId": try #require(created.string("localId")), "disableUser": true],
                headers: TestConfiguration.adminHeader)
            #expect(admin.status == 200)
            #expect(try await Self.signIn(client, "kim@example.com", "wrong-secret").errorMessage == "INVALID_LOGIN_CREDENTIALS")
            #expect(try await Self.signIn(client, "kim@example.com", "kims-secret").errorMessage == "USER_DISABLED")
        }
    }

    @Test("failed sign-ins are limited per address and per client address; a correct password gives its slot back")
    func guessingLimits() async throws {
        let harness = try APIHarness {
            $0.limits =
                "{perNumber: [\"100/1m\"], perIP: [\"1000/1m\"], perProject: [\"10000/1m\"], pumping: {enabled: false}, passwordSignInsPerAccount: [\"3/15m\"], passwordSignInsPerIP: [\"6/15m\"]}"
        }
        try await harness.run { client, _ in
            #expect(try await Self.signUp(client, "lee@example.com", "lees-secret").status == 200)
            #expect(try await Self.signUp(client, "ray@example.com", "rays-secret").status == 200)
            // Successes do not count: more of them than the limit allows failures.
            for _ in 0..<5 { #expect(try await Self.signIn(client, "lee@example.com", "lees-secret").status == 200) }
            for _ in 0..<3 { #expect(try await Self.signIn(client, "lee@example.com", "guess").errorMessage == "INVALID_PASSWORD") }
            let locked = try await Self.signIn(client, "lee@example.com", "lees-secret")
            #expect(locked.status == 400)
            #expect(locked.errorMessage?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER : Access to this account has been temporarily disabled") == true)
            #expect(locked.header("Retry-After") != nil)
            // The other address still signs in; its failures fill the client address's allowance.
            #expect(try await Self.signIn(client, "ray@example.com", "rays-secret").status == 200)
            for _ in 0..<3 { #expect(try await Self.signIn(client, "ray@example.com", "guess").errorMessage == "INVALID_PASSWORD") }
            #expect(try await Self.signIn(client, "ray@example.com", "rays-secret").errorMessage?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true)
        }
    }

    @Test("a password user with a second factor gets mfaPendingCredential and no tokens")
    func secondFactor() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let created = try await Self.signUp(client, "mfa@example.com", "mfa-secret")
            let localID = try #require(created.string("localId"))
            try await harness.withStore { store in
                try await store.addMFAEnrollment(
                    MFAEnrollment(enrollmentID: "enrollment-1", phoneNumber: "+15555550123", displayName: "work", enrolledAt: Date()),
                    projectID: TestConfiguration.projectID, localID: localID)
            }
            let signedIn = try await Self.signIn(client, "mfa@example.com", "mfa-secret")
            #expect(signedIn.status == 200, "\(signedIn.errorMessage ?? "")")
            #expect(signedIn.string("idToken") == nil && signedIn.string("refreshToken") == nil)
            #expect(signedIn.string("mfaPendingCredential") != nil)
            let factors = try #require(signedIn.json["mfaInfo"] as? [[String: Any]])
            #expect(factors.first?["mfaEnrollmentId"] as? String == "enrollment-1")
            #expect((factors.first?["phoneInfo"] as? String)?.contains("*") == true, "the number is masked")
        }
    }

    @Test("anonymous signUp, and signUp with its idToken upgrades the same user to a password account")
    func anonymousUpgrade() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let anonymous = try await client.post(Paths.v1 + "signUp", apiKey: Self.key, json: ["returnSecureToken": true])
            #expect(anonymous.status == 200, "\(anonymous.errorMessage ?? "")")
            #expect(anonymous.string("email") == nil)
            let claims = AppleSignInTests.claims(anonymous.string("idToken"))
            #expect((claims["firebase"] as? [String: Any])?["sign_in_provider"] as? String == "anonymous")
            let upgraded = try await client.post(
                Paths.v1 + "signUp", apiKey: Self.key,
                json: ["idToken": try #require(anonymous.string("idToken")), "email": "anon@example.com", "password": "anon-secret"])
            #expect(upgraded.status == 200, "\(upgraded.errorMessage ?? "")")
            #expect(upgraded.string("localId") == anonymous.string("localId"))
            let signedIn = try await Self.signIn(client, "anon@example.com", "anon-secret")
            #expect(signedIn.string("localId") == anonymous.string("localId"))
            // The anonymous session was revoked with the credential change.
            #expect(try await SecurityTests.lookup(client, try #require(anonymous.string("idToken"))).errorMessage == "TOKEN_EXPIRED")
        }
        let closed = try APIHarness { $0.password = "{enabled: false, anonymous: false}" }
        try await closed.run { client, _ in
            let anonymous = try await client.post(Paths.v1 + "signUp", apiKey: Self.key, json: [:])
            #expect(anonymous.errorMessage == "ADMIN_ONLY_OPERATION")
            let signUp = try await Self.signUp(client, "a@example.com", "secret-1")
            #expect(signUp.errorMessage == "OPERATION_NOT_ALLOWED")
            let signIn = try await Self.signIn(client, "a@example.com", "secret-1")
            #expect(signIn.errorMessage == "PASSWORD_LOGIN_DISABLED")
        }
    }

    @Test("GET /v2/passwordPolicy in Firebase's shape; ENFORCE names each missing requirement; 4,096 bytes at most")
    func policy() async throws {
        let harness = try APIHarness {
            $0.passwordPolicy =
                "{enforcementState: ENFORCE, customStrengthOptions: {minPasswordLength: 8, maxPasswordLength: 30, containsUppercaseCharacter: true, containsNumericCharacter: true, containsNonAlphanumericCharacter: true}}"
        }
        try await harness.run { client, _ in
            let policy = try await client.get("/identitytoolkit.googleapis.com/v2/passwordPolicy?key=\(Self.key)")
            #expect(policy.status == 200)
            #expect(policy.string("enforcementState") == "ENFORCE")
            #expect(policy.json["schemaVersion"] as? Int == 1)
            let options = try #require(policy.json["customStrengthOptions"] as? [String: Any])
            #expect(options["minPasswordLength"] as? Int == 8 && options["maxPasswordLength"] as? Int == 30)
            #expect(options["containsUppercaseCharacter"] as? Bool == true && options["containsLowercaseCharacter"] == nil)
            #expect((policy.json["allowedNonAlphanumericCharacters"] as? [String])?.contains("!") == true)

            let refused = try await Self.signUp(client, "p@example.com", "short")
            #expect(
                refused.errorMessage
                    == "PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: [Password must contain at least 8 characters, Password must contain an upper case character, Password must contain a numeric character, Password must contain a non-alphanumeric character]"
            )
            #expect(
                try await Self.signUp(client, "p@example.com", "Aa1!" + String(repeating: "a", count: 40)).errorMessage
                    == "PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: [Password may contain at most 30 characters]")
            #expect(try await Self.signUp(client, "p@example.com", "Str0ng!pass").status == 200)
        }
        let open = try APIHarness()
        try await open.run { client, _ in
            let policy = try await client.get("/v2/passwordPolicy?key=\(Self.key)")
            #expect(policy.string("enforcementState") == "OFF")
            #expect(
                try await Self.signUp(client, "q@example.com", String(repeating: "é", count: 2049)).errorMessage
                    == "PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: [Password may contain at most 4096 bytes]")
            #expect(try await Self.signUp(client, "q@example.com", String(repeating: "é", count: 2048)).status == 200)
        }
    }

    @Test("signUp by someone else, then the owner's email link: the password is gone and its sessions are revoked")
    func preHijacking() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let squatter = try await Self.signUp(client, "owner@example.com", "squatters-pw")
            #expect(squatter.status == 200)
            let link = try await EmailLinkTests.sendLink("owner@example.com", harness: harness, client: client, admin: admin)
            let code = try #require(queryItems(link)["oobCode"])
            let owner = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: Self.key, json: ["email": "owner@example.com", "oobCode": code])
            #expect(owner.status == 200)
            #expect(owner.string("localId") == squatter.string("localId"))
            #expect(try await Self.signIn(client, "owner@example.com", "squatters-pw").errorMessage == "INVALID_PASSWORD")
            #expect(try await SecurityTests.lookup(client, try #require(squatter.string("idToken"))).errorMessage == "TOKEN_EXPIRED")
            let methods = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "owner@example.com", "continueUri": "http://localhost"])
            #expect(methods.json["signinMethods"] as? [String] == ["emailLink"])
        }
    }
}
