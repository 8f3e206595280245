import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Sign in with Apple over the Identity Toolkit wire: request shapes as the iOS SDK sends them
/// (`VerifyAssertionRequest`: requestUri, postBody with providerId, id_token, nonce and user,
/// returnSecureToken, returnIdpCredential, autoCreate), tokens from a fake Apple over TLS.
@Suite("Sign in with Apple over the Identity Toolkit wire (fake Apple over TLS, real broker, real SQLite)")
struct AppleSignInTests {
    static let key = TestConfiguration.apiKey
    static let bundleID = "com.example.herald"
    static let servicesID = "com.example.herald.web"

    /// A harness whose project trusts `fake` for Apple.
    static func harness(_ fake: FakeApple, _ adjust: (inout TestConfiguration) -> Void = { _ in }) throws -> APIHarness {
        try APIHarness { settings in
            settings.apple = TestConfiguration.appleSection(fake, clientIds: [bundleID, servicesID])
            adjust(&settings)
        }
    }

    /// `signInWithIdp` as iOS sends it.
    static func signIn(
        _ client: HeraldClient, token: String, nonce: String?, user: String? = nil, returnCredential: Bool = true,
        extra: [String: any Sendable] = [:], path: String = Paths.v1 + "signInWithIdp"
    ) async throws -> HeraldClient.Answer {
        var fields = [("providerId", "apple.com"), ("id_token", token)]
        if let nonce { fields.append(("nonce", nonce)) }
        if let user { fields.append(("user", user)) }
        var body: [String: any Sendable] = [
            "requestUri": "http://localhost", "postBody": FormEncoding.encode(fields.map { (name: $0.0, value: $0.1) }),
            "returnSecureToken": true, "returnIdpCredential": returnCredential, "autoCreate": true,
        ]
        for (key, value) in extra { body[key] = value }
        return try await client.post(path, apiKey: key, json: body)
    }

    /// Claims of one of Herald's ID tokens (not verified: the test only reads them).
    static func claims(_ idToken: String?) -> [String: Any] {
        guard let part = idToken?.split(separator: ".").dropFirst().first else { return [:] }
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] } ?? [:]
    }

    static func nonce() -> String { "n-" + UUID().uuidString }

    @Test(
        "a valid token creates a user with Firebase's response fields; the same sub signs in to the same user; lookup and createAuthUri show apple.com"
    )
    func newUserThenSameUser() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, _ in
            let nonce = Self.nonce()
            let token = fake.identityToken(
                subject: "001234.sub-ada", audience: Self.bundleID, rawNonce: nonce, email: "ada@example.com", emailVerified: "true",
                isPrivateEmail: "false")
            let first = try await Self.signIn(
                client, token: token, nonce: nonce, user: #"{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"ada@example.com"}"#)
            #expect(first.status == 200, "\(first.errorMessage ?? "")")
            #expect(first.string("kind") == "identitytoolkit#VerifyAssertionResponse")
            #expect(first.string("providerId") == "apple.com")
            #expect(first.string("federatedId") == "001234.sub-ada")
            #expect(first.string("email") == "ada@example.com")
            #expect(first.json["emailVerified"] as? Bool == true)
            #expect(first.string("displayName") == "Ada Lovelace")
            #expect(first.json["isNewUser"] as? Bool == true)
            #expect(first.string("oauthIdToken") == token, "returnIdpCredential echoes Apple's token")
            #expect(first.string("expiresIn") == "3600")
            #expect(first.string("refreshToken") != nil)
            let raw = try #require(first.string("rawUserInfo"))
            #expect((try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])?["sub"] as? String == "001234.sub-ada")
            let localID = try #require(first.string("localId"))
            let claims = Self.claims(first.string("idToken"))
            let firebase = try #require(claims["firebase"] as? [String: Any])
            #expect(firebase["sign_in_provider"] as? String == "apple.com")
            #expect((firebase["identities"] as? [String: Any])?["apple.com"] as? [String] == ["001234.sub-ada"])
            #expect(claims["user_id"] as? String == localID)

            // The same Apple account, a fresh token without the one-time name: the same user, new tokens.
            let lookedUp = try await SecurityTests.lookup(client, try #require(first.string("idToken")))
            let before = try #require(((lookedUp.json["users"] as? [[String: Any]])?.first)?["lastLoginAt"] as? String)
            harness.clock.advance(5)
            let again = Self.nonce()
            let second = try await Self.signIn(
                client, token: fake.identityToken(subject: "001234.sub-ada", audience: Self.servicesID, rawNonce: again), nonce: again,
                path: Paths.legacy + "verifyAssertion")
            #expect(second.status == 200, "\(second.errorMessage ?? "")")
            #expect(second.string("localId") == localID)
            #expect(second.json["isNewUser"] as? Bool == false)
            #expect(second.string("displayName") == "Ada Lovelace")
            #expect(second.string("idToken") != first.string("idToken"))
            let secondToken = try #require(second.string("idToken"))
            let user = try #require(((try await SecurityTests.lookup(client, secondToken)).json["users"] as? [[String: Any]])?.first)
            #expect(Int64(user["lastLoginAt"] as? String ?? "") ?? 0 > Int64(before) ?? .max)
            let providers = user["providerUserInfo"] as? [[String: Any]] ?? []
            #expect(providers.contains { $0["providerId"] as? String == "apple.com" && $0["rawId"] as? String == "001234.sub-ada" })

            let methods = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "ada@example.com", "continueUri": "http://localhost"])
            #expect(methods.json["signinMethods"] as? [String] == ["apple.com"])
            #expect(methods.json["allProviders"] as? [String] == ["apple.com"])
        }
    }

    @Test("every bad token is refused with Identity Toolkit's error, and nobody is signed in")
    func refusals() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, _ in
            let nonce = Self.nonce()
            func token(
                audience: String = Self.bundleID, issuedAt: Date = Date(), lifetime: TimeInterval = 600, kid: String = "k1",
                headerKid: String? = nil, nonce raw: String? = nil, overrides: [String: Any?] = [:]
            ) -> String {
                fake.identityToken(
                    subject: "001234.mallory", audience: audience, rawNonce: raw ?? nonce, issuedAt: issuedAt, lifetime: lifetime, kid: kid,
                    headerKid: headerKid, overrides: overrides)
            }
            let good = token()
            let tampered = String(good.dropLast(4)) + (good.hasSuffix("AAAA") ? "BBBB" : "AAAA")
            let cases: [(String, String, String?, String)] = [
                ("wrong aud", token(audience: "com.other.app"), nonce, "INVALID_IDP_RESPONSE"),
                ("wrong iss", token(overrides: ["iss": "https://appleid.apple.com.evil"]), nonce, "INVALID_IDP_RESPONSE"),
                ("expired", token(issuedAt: Date().addingTimeInterval(-3600), lifetime: 600), nonce, "INVALID_IDP_RESPONSE"),
                ("issued in the future", token(issuedAt: Date().addingTimeInterval(600)), nonce, "INVALID_IDP_RESPONSE"),
                ("bad signature", tampered, nonce, "INVALID_IDP_RESPONSE"),
                ("signed by another key under a known kid", token(kid: "k3", headerKid: "k1"), nonce, "INVALID_IDP_RESPONSE"),
                ("not a JWT", "not-a-token", nonce, "INVALID_IDP_RESPONSE"),
                ("missing nonce", token(), nil, "MISSING_OR_INVALID_NONCE : Nonce is missing in the request."),
                (
                    "wrong nonce", token(), "other-nonce",
                    "MISSING_OR_INVALID_NONCE : The nonce in ID Token \"\(AppleIdentityCheck.nonceHash(nonce))\" does not match the SHA256 hash of the raw nonce \"other-nonce\" in the request."
                ),
            ]
            for (name, jwt, raw, expected) in cases {
                let answer = try await Self.signIn(client, token: jwt, nonce: raw)
                #expect(answer.status == 400, "\(name)")
                #expect(answer.errorMessage?.hasPrefix(expected) == true, "\(name): \(answer.errorMessage ?? "")")
                #expect(answer.string("idToken") == nil)
            }
            // A token is accepted once.
            let once = try await Self.signIn(client, token: good, nonce: nonce)
            #expect(once.status == 200, "\(once.errorMessage ?? "")")
            let replay = try await Self.signIn(client, token: good, nonce: nonce)
            #expect(replay.errorMessage == "MISSING_OR_INVALID_NONCE : Duplicate credential received. Please try again with a new credential.")
            // Nor under another spelling of the same bytes: padding, or the signature's unused low bits set.
            for variant in [good + "=", good + "==", NonCanonicalJWT.lowBitFlipped(good)] {
                let respelled = try await Self.signIn(client, token: variant, nonce: nonce)
                #expect(respelled.status == 400)
                #expect(respelled.string("idToken") == nil, "\(respelled.errorMessage ?? "")")
            }

            // Request shape errors.
            let noURI = try await client.post(Paths.v1 + "signInWithIdp", apiKey: Self.key, json: ["postBody": "providerId=apple.com"])
            #expect(noURI.errorMessage == "MISSING_REQUEST_URI")
            let noProvider = try await client.post(
                Paths.v1 + "signInWithIdp", apiKey: Self.key, json: ["requestUri": "http://localhost", "postBody": "id_token=x"])
            #expect(noProvider.errorMessage?.hasPrefix("INVALID_CREDENTIAL_OR_PROVIDER_ID") == true)
            let google = try await client.post(
                Paths.v1 + "signInWithIdp", apiKey: Self.key,
                json: ["requestUri": "http://localhost", "postBody": "providerId=google.com&id_token=x"])
            #expect(google.errorMessage?.hasPrefix("OPERATION_NOT_ALLOWED") == true)
            let disabled = try await client.post(
                Paths.v1 + "signInWithIdp", apiKey: TestConfiguration.disabledAPIKey,
                json: ["requestUri": "http://localhost", "postBody": "providerId=apple.com&id_token=\(token())&nonce=\(nonce)"])
            #expect(disabled.errorMessage == "OPERATION_NOT_ALLOWED")
            let badPending = try await client.post(
                Paths.v1 + "signInWithIdp", apiKey: Self.key, json: ["requestUri": "http://localhost", "pendingToken": "forged"])
            #expect(badPending.errorMessage == "INVALID_PENDING_TOKEN")
            // Nothing above leaked a token into the logs.
            #expect(harness.logs.text.contains(good) == false && harness.logs.text.contains(nonce) == false)
        }
    }

    @Test("keys rotate: an unknown kid fetches the set again (at most once a minute), and Apple unreachable answers 503 with Retry-After")
    func keyRotationAndOutage() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID], published: ["k1", "k2"])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, _ in
            let first = Self.nonce()
            let signedIn = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.rot", audience: Self.bundleID, rawNonce: first), nonce: first)
            #expect(signedIn.status == 200, "\(signedIn.errorMessage ?? "")")
            #expect(fake.keyFetches == 1)

            // Apple rotates k2 out and k3 in. Within a minute of the last fetch a k3 token is refused
            // without fetching; after it, a k3 token makes the API fetch again, once.
            fake.publish(["k1", "k3"])
            let early = Self.nonce()
            let tooSoon = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.rot", audience: Self.bundleID, rawNonce: early, kid: "k3"), nonce: early)
            #expect(tooSoon.errorMessage?.hasPrefix("INVALID_IDP_RESPONSE") == true)
            #expect(fake.keyFetches == 1)
            harness.clock.advance(61)
            let rotated = Self.nonce()
            let afterRotation = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.rot", audience: Self.bundleID, rawNonce: rotated, kid: "k3"), nonce: rotated)
            #expect(afterRotation.status == 200, "\(afterRotation.errorMessage ?? "")")
            #expect(fake.keyFetches == 2)
            // k2 is gone now; a k2 token within the minute is refused without another fetch.
            let stale = Self.nonce()
            let refused = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.rot", audience: Self.bundleID, rawNonce: stale, kid: "k2"), nonce: stale)
            #expect(refused.errorMessage?.hasPrefix("INVALID_IDP_RESPONSE") == true)
            #expect(fake.keyFetches == 2)
        }

        // A fresh API whose first fetch fails: 503 with Retry-After, never a sign-in.
        fake.setKeysAvailable(false)
        let outage = try Self.harness(fake)
        try await outage.run { client, _ in
            let nonce = Self.nonce()
            let answer = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.down", audience: Self.bundleID, rawNonce: nonce), nonce: nonce)
            #expect(answer.status == 503)
            #expect(answer.header("Retry-After").flatMap(Int.init) ?? 0 >= 1)
            #expect(answer.string("idToken") == nil)
            // Apple back: the next attempt after the pause signs in (the token was never spent).
            fake.setKeysAvailable(true)
            outage.clock.advance(6)
            let retried = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.down", audience: Self.bundleID, rawNonce: nonce), nonce: nonce)
            #expect(retried.status == 200, "\(retried.errorMessage ?? "")")
        }
    }

    @Test("linking: to the signed-in phone user, to the email-link account with the same verified email, and conflicts as 200 errorMessage")
    func linking() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, admin in
            // A phone user links Apple to itself.
            let phone = try await SecurityTests.phoneSignIn(client)
            let phoneUser = try #require(phone.string("localId"))
            let nonce = Self.nonce()
            let linked = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.phone-user", audience: Self.bundleID, rawNonce: nonce), nonce: nonce,
                extra: ["idToken": try #require(phone.string("idToken"))])
            #expect(linked.status == 200, "\(linked.errorMessage ?? "")")
            #expect(linked.string("localId") == phoneUser)
            #expect(linked.json["isNewUser"] as? Bool == false)
            let identities = (Self.claims(linked.string("idToken"))["firebase"] as? [String: Any])?["identities"] as? [String: Any]
            #expect(identities?["apple.com"] as? [String] == ["001.phone-user"] && identities?["phone"] as? [String] == [SecurityTests.testNumber])

            // Another user trying to link the same Apple account: 200 with errorMessage (iOS raises it), 400 without returnIdpCredential.
            let other = try await SecurityTests.emailSignIn("other@example.com", harness: harness, client: client, admin: admin)
            for returnCredential in [true, false] {
                let again = Self.nonce()
                let conflict = try await Self.signIn(
                    client, token: fake.identityToken(subject: "001.phone-user", audience: Self.bundleID, rawNonce: again), nonce: again,
                    returnCredential: returnCredential, extra: ["idToken": try #require(other.string("idToken"))])
                if returnCredential {
                    #expect(conflict.status == 200)
                    #expect(conflict.string("errorMessage") == "FEDERATED_USER_ID_ALREADY_LINKED")
                    #expect(conflict.string("federatedId") == "001.phone-user" && conflict.string("pendingToken") != nil)
                    #expect(conflict.string("idToken") == nil)
                } else {
                    #expect(conflict.errorMessage == "FEDERATED_USER_ID_ALREADY_LINKED")
                }
            }

            // An email-link account (verified address) and an Apple token with the same verified email: linked, not duplicated.
            let erin = try await SecurityTests.emailSignIn("erin@example.com", harness: harness, client: client, admin: admin)
            let erinID = try #require(erin.string("localId"))
            let erinNonce = Self.nonce()
            let merged = try await Self.signIn(
                client,
                token: fake.identityToken(subject: "001.erin", audience: Self.bundleID, rawNonce: erinNonce, email: "Erin@example.com"),
                nonce: erinNonce)
            #expect(merged.status == 200, "\(merged.errorMessage ?? "")")
            #expect(merged.string("localId") == erinID)
            #expect(merged.json["isNewUser"] as? Bool == false)
            let methods = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "erin@example.com", "continueUri": "http://localhost"])
            #expect(Set(methods.json["signinMethods"] as? [String] ?? []) == ["emailLink", "apple.com"])

            // Unlinking apple.com: the account no longer signs in with it (a new Apple sign-in makes a new user).
            let unlinked = try await client.post(
                Paths.v1 + "update", apiKey: Self.key, json: ["idToken": try #require(merged.string("idToken")), "deleteProvider": ["apple.com"]])
            #expect(unlinked.status == 200, "\(unlinked.errorMessage ?? "")")
            #expect((unlinked.json["providerUserInfo"] as? [[String: Any]])?.contains { $0["providerId"] as? String == "apple.com" } == false)
            #expect(unlinked.string("idToken") != nil, "unlinking changes credentials: fresh tokens")
        }
    }

    @Test("pre-hijacking: an account holding the address unverified gets needConfirmation and a pendingToken, never the Apple identity")
    func needConfirmation() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, _ in
            // An admin import (or an attacker) put the address on a phone account without proving it.
            let created = try await client.post(
                SecurityTests.adminBase + "/accounts",
                json: ["email": "frank@example.com", "phoneNumber": SecurityTests.testNumber, "emailVerified": false],
                headers: TestConfiguration.adminHeader)
            let holder = try #require(created.string("localId"), "\(created.errorMessage ?? "")")
            let nonce = Self.nonce()
            let answer = try await Self.signIn(
                client,
                token: fake.identityToken(subject: "001.frank", audience: Self.bundleID, rawNonce: nonce, email: "frank@example.com"),
                nonce: nonce)
            #expect(answer.status == 200, "\(answer.errorMessage ?? "")")
            #expect(answer.json["needConfirmation"] as? Bool == true)
            #expect(answer.string("idToken") == nil && answer.string("localId") == nil)
            #expect(answer.string("email") == "frank@example.com" && answer.string("federatedId") == "001.frank")
            let pending = try #require(answer.string("pendingToken"))

            // Replaying the pending token alone changes nothing while the address is unproven.
            let replay = try await client.post(
                Paths.v1 + "signInWithIdp", apiKey: Self.key,
                json: ["requestUri": "http://localhost", "pendingToken": pending, "returnSecureToken": true])
            #expect(replay.json["needConfirmation"] as? Bool == true)

            // The holder signs in its own way (phone), then links the Apple credential with the pending token.
            let phone = try await SecurityTests.phoneSignIn(client)
            #expect(phone.string("localId") == holder)
            let phoneToken = try #require(phone.string("idToken"))
            let linked = try await client.post(
                Paths.v1 + "signInWithIdp", apiKey: Self.key,
                json: [
                    "requestUri": "http://localhost", "pendingToken": pending, "idToken": phoneToken,
                    "returnSecureToken": true,
                ])
            #expect(linked.status == 200, "\(linked.errorMessage ?? "")")
            #expect(linked.string("localId") == holder)
            let identities = (Self.claims(linked.string("idToken"))["firebase"] as? [String: Any])?["identities"] as? [String: Any]
            #expect(identities?["apple.com"] as? [String] == ["001.frank"])
        }
    }

    @Test("signUp by someone else, then the owner's Apple sign-in: needConfirmation; the password account never gets the Apple identity")
    func passwordSquatterGetsNoAppleLink() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, _ in
            let squatter = try await PasswordAccountTests.signUp(client, "gina@example.com", "squatter-pw")
            #expect(squatter.status == 200)
            let nonce = Self.nonce()
            let answer = try await Self.signIn(
                client,
                token: fake.identityToken(subject: "001.gina", audience: Self.bundleID, rawNonce: nonce, email: "gina@example.com"),
                nonce: nonce)
            #expect(answer.json["needConfirmation"] as? Bool == true)
            #expect(answer.string("idToken") == nil && answer.string("localId") == nil)
            let again = try await PasswordAccountTests.signIn(client, "gina@example.com", "squatter-pw")
            let identities = (Self.claims(again.string("idToken"))["firebase"] as? [String: Any])?["identities"] as? [String: Any]
            #expect(identities?["apple.com"] == nil, "the squatter's account has no Apple identity")
        }
    }

    @Test("pre-hijacking through Apple: an Apple account claiming an address unverified loses it, and its link, to the owner's email link")
    func appleAccountLosesUnprovenAddress() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, admin in
            let nonce = Self.nonce()
            let attacker = try await Self.signIn(
                client,
                token: fake.identityToken(
                    subject: "001.attacker", audience: Self.bundleID, rawNonce: nonce, email: "victim@example.com", emailVerified: "false"),
                nonce: nonce)
            #expect(attacker.status == 200, "\(attacker.errorMessage ?? "")")
            #expect(attacker.json["emailVerified"] as? Bool == false)
            let accountID = try #require(attacker.string("localId"))

            // The owner proves the address: the account becomes theirs, the Apple link and its sessions are gone.
            let owner = try await SecurityTests.emailSignIn("victim@example.com", harness: harness, client: client, admin: admin)
            #expect(owner.string("localId") == accountID)
            let oldSession = try await SecurityTests.lookup(client, try #require(attacker.string("idToken")))
            #expect(oldSession.errorMessage == "TOKEN_EXPIRED")
            let ownerToken = try #require(owner.string("idToken"))
            let providers = ((try await SecurityTests.lookup(client, ownerToken)).json["users"] as? [[String: Any]])?.first?["providerUserInfo"]
            #expect((providers as? [[String: Any]])?.contains { $0["providerId"] as? String == "apple.com" } == false)
            let again = Self.nonce()
            let attackerAgain = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.attacker", audience: Self.bundleID, rawNonce: again), nonce: again)
            #expect(attackerAgain.string("localId") != accountID, "the Apple account now signs in to a new user of its own")
        }
    }

    @Test("a user with a phone second factor gets mfaPendingCredential instead of tokens")
    func secondFactor() async throws {
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        let harness = try Self.harness(fake)
        try await harness.run { client, _ in
            let nonce = Self.nonce()
            let first = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.mfa", audience: Self.bundleID, rawNonce: nonce), nonce: nonce)
            let localID = try #require(first.string("localId"), "\(first.errorMessage ?? "")")
            try await harness.withStore {
                try await $0.addMFAEnrollment(
                    MFAEnrollment(enrollmentID: "enrolled-factor", phoneNumber: "+15555550123", displayName: "work", enrolledAt: Date()),
                    projectID: TestConfiguration.projectID, localID: localID)
            }
            let again = Self.nonce()
            let challenged = try await Self.signIn(
                client, token: fake.identityToken(subject: "001.mfa", audience: Self.bundleID, rawNonce: again), nonce: again)
            #expect(challenged.status == 200, "\(challenged.errorMessage ?? "")")
            #expect(challenged.string("mfaPendingCredential") != nil)
            #expect(challenged.string("idToken") == nil && challenged.string("refreshToken") == nil)
            let factors = challenged.json["mfaInfo"] as? [[String: Any]]
            #expect(factors?.first?["mfaEnrollmentId"] as? String == "enrolled-factor")
            #expect(factors?.first?["phoneInfo"] as? String != "+15555550123", "masked before the second factor")
        }
    }
}
