import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing

/// The security review's findings, each reproduced on the wire the way an attacker would try it.
@Suite("Security review findings over the wire (real broker, real SQLite)")
struct SecurityTests {
    static let key = TestConfiguration.apiKey
    static let adminBase = "/identitytoolkit.googleapis.com/v1/projects/\(TestConfiguration.projectID)"
    /// A test number (fixed code, no SMS), so a phone sign-in needs no worker.
    static let testNumber = "+16505553434"

    /// Signs in with the test number; returns the answer (idToken, refreshToken, localId).
    static func phoneSignIn(_ client: HeraldClient) async throws -> HeraldClient.Answer {
        let session = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": testNumber])
        let sessionInfo = try #require(session.string("sessionInfo"), "\(session.errorMessage ?? "")")
        let signedIn = try await client.post(Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": sessionInfo, "code": "654321"])
        guard signedIn.status == 200 else { throw TestFailure("phone sign-in: \(signedIn.errorMessage ?? "")") }
        return signedIn
    }

    /// Sends an email link and signs in with it.
    static func emailSignIn(
        _ email: String, harness: APIHarness, client: HeraldClient, admin: AMQPConnection, idToken: String? = nil
    ) async throws -> HeraldClient.Answer {
        let link = try await EmailLinkTests.sendLink(email, harness: harness, client: client, admin: admin)
        var body: [String: any Sendable] = ["email": email, "oobCode": queryItems(link)["oobCode"]!]
        if let idToken { body["idToken"] = idToken }
        return try await client.post(Paths.v1 + "signInWithEmailLink", apiKey: key, json: body)
    }

    static func refresh(_ client: HeraldClient, _ token: String) async throws -> HeraldClient.Answer {
        try await client.postForm(Paths.token, apiKey: key, form: "grant_type=refresh_token&refresh_token=\(token)")
    }

    static func lookup(_ client: HeraldClient, _ idToken: String) async throws -> HeraldClient.Answer {
        try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": idToken])
    }

    @Test("pre-hijacking: a user cannot claim an unproven address; the owner's email link takes the account over with nothing of the attacker's left")
    func accountPreHijacking() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            // The attacker signs in by phone and tries to put the victim's address on the account.
            let attacker = try await Self.phoneSignIn(client)
            let attackerID = try #require(attacker.string("idToken"))
            let claim = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": attackerID, "email": "victim@example.com"])
            #expect(claim.errorMessage == "OPERATION_NOT_ALLOWED : Please verify the new email before changing email.")
            let attackerUser = try #require((try await Self.lookup(client, attackerID).json["users"] as? [[String: Any]])?.first)
            #expect(attackerUser["email"] == nil)

            // The address can still end up unverified on an account (an admin import); the attacker holds a
            // session of that account through its phone number and password.
            let imported = try await client.post(
                Self.adminBase + "/accounts",
                json: ["email": "victim@example.com", "phoneNumber": Self.testNumber, "password": "attacker-pw"],
                headers: TestConfiguration.adminHeader)
            #expect(imported.errorMessage == "PHONE_NUMBER_EXISTS")
            _ = try await client.post(Paths.v1 + "delete", apiKey: Self.key, json: ["idToken": attackerID])
            let account = try await client.post(
                Self.adminBase + "/accounts",
                json: ["email": "victim@example.com", "phoneNumber": Self.testNumber, "password": "attacker-pw"],
                headers: TestConfiguration.adminHeader)
            let accountID = try #require(account.string("localId"))
            let held = try await Self.phoneSignIn(client)
            #expect(held.string("localId") == accountID)
            let heldID = try #require(held.string("idToken"))
            let heldRefresh = try #require(held.string("refreshToken"))

            // The owner proves the address.
            let owner = try await Self.emailSignIn("victim@example.com", harness: harness, client: client, admin: admin)
            #expect(owner.status == 200)
            #expect(owner.string("localId") == accountID)
            let ownerID = try #require(owner.string("idToken"))
            let ownerUser = try #require((try await Self.lookup(client, ownerID).json["users"] as? [[String: Any]])?.first)
            #expect(ownerUser["emailVerified"] as? Bool == true)
            #expect(ownerUser["phoneNumber"] == nil)
            let providers = (ownerUser["providerUserInfo"] as? [[String: Any]])?.compactMap { $0["providerId"] as? String }
            #expect(providers?.contains("phone") == false)
            // The attacker's password is gone too: only the email link signs in now.
            let methods = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "victim@example.com", "continueUri": "http://localhost"])
            #expect(methods.json["signinMethods"] as? [String] == ["emailLink"])

            // Nothing the attacker held still works: not the ID token, not the refresh token, not the number.
            #expect(try await Self.lookup(client, heldID).errorMessage == "TOKEN_EXPIRED")
            #expect(try await Self.refresh(client, heldRefresh).errorMessage == "TOKEN_EXPIRED")
            let again = try await Self.phoneSignIn(client)
            #expect(again.string("localId") != accountID)
            #expect(again.json["isNewUser"] as? Bool == true)
            #expect(try await Self.lookup(client, ownerID).status == 200)
        }
    }

    @Test("password, provider and admin email changes revoke earlier ID and refresh tokens; the caller gets fresh ones")
    func credentialChangesRevoke() async throws {
        let harness = try APIHarness {
            $0.limits =
                #"{perNumber: ["100/1m"], perIP: ["1000/1m"], perProject: ["10000/1m"], passwordChangesPerUser: ["2/1h"], pumping: {enabled: false}}"#
        }
        try await harness.run { client, admin in
            let signedIn = try await Self.emailSignIn("erin@example.com", harness: harness, client: client, admin: admin)
            var idToken = try #require(signedIn.string("idToken"))
            var refreshToken = try #require(signedIn.string("refreshToken"))
            let localID = try #require(signedIn.string("localId"))

            // Password change (user side).
            let changed = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": idToken, "password": "correct horse"])
            #expect(changed.status == 200)
            #expect(try await Self.lookup(client, idToken).errorMessage == "TOKEN_EXPIRED")
            #expect(try await Self.refresh(client, refreshToken).errorMessage == "TOKEN_EXPIRED")
            idToken = try #require(changed.string("idToken"))
            refreshToken = try #require(changed.string("refreshToken"))
            #expect(try await Self.lookup(client, idToken).status == 200)
            #expect(try await Self.refresh(client, refreshToken).status == 200)

            // A password far too long is refused before any hashing; the per-user throttle then stops a third change.
            let long = String(repeating: "x", count: 4097)
            #expect(
                try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": idToken, "password": long]).errorMessage
                    == "PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: [Password may contain at most 4096 bytes]")
            let second = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": idToken, "password": "battery staple"])
            idToken = try #require(second.string("idToken"))
            let third = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": idToken, "password": "staple battery"])
            #expect(third.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(third.header("Retry-After") != nil)

            // Removing a provider.
            let removed = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["idToken": idToken, "deleteProvider": ["password"]])
            #expect(removed.status == 200)
            #expect(try await Self.lookup(client, idToken).errorMessage == "TOKEN_EXPIRED")
            idToken = try #require(removed.string("idToken"))
            refreshToken = try #require(removed.string("refreshToken"))

            // An admin changes the address: every session of the user ends.
            let moved = try await client.post(
                Self.adminBase + "/accounts:update", json: ["localId": localID, "email": "erin.new@example.com"],
                headers: TestConfiguration.adminHeader)
            #expect(moved.status == 200)
            #expect(try await Self.lookup(client, idToken).errorMessage == "TOKEN_EXPIRED")
            #expect(try await Self.refresh(client, refreshToken).errorMessage == "TOKEN_EXPIRED")
        }
    }

    @Test("continue URLs: parser confusions and non-web schemes are INVALID_CONTINUE_URI; the action handler redirects only to the rebuilt URL")
    func openRedirect() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            for bad in [
                #"https://evil.com\@localhost/"#, #"https://evil.com\@app.example.com/x"#, "https://evil.com@app.example.com/",
                "javascript:alert(document.domain)//app.example.com", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd",
            ] {
                let answer = try await client.post(
                    Paths.v1 + "sendOobCode", apiKey: Self.key,
                    json: ["requestType": "EMAIL_SIGNIN", "email": "frank@example.com", "continueUrl": bad])
                #expect(answer.errorMessage == "INVALID_CONTINUE_URI : ((expected an absolute URI with valid scheme and host))", "\(bad)")
            }
            #expect(try await harness.publishedEmailJobs(admin).isEmpty)

            // A forged link with such a continue URL is not followed.
            let action = "/__/auth/action?apiKey=\(Self.key)&mode=signIn&oobCode=x&continueUrl="
            for bad in [#"https://evil.com\@localhost/"#, "javascript:alert(1)//localhost", "https://evil.com%2F@localhost/"] {
                let answer = try await client.get(action + SignInLink.percentEncode(bad))
                #expect(answer.status == 400, "\(bad)")
                #expect(answer.header("Location") == nil)
            }
            // A genuine one goes to the URL as rebuilt from its parts.
            let good = try await client.get(action + SignInLink.percentEncode(#"HTTPS://App.Example.com/done?x="y""#))
            #expect(good.status == 303)
            #expect(good.header("Location") == "https://app.example.com/done?x=%22y%22&apiKey=\(Self.key)&mode=signIn&oobCode=x")
        }
    }

    @Test("CORS: authorized pages may call the API, other pages and every admin call get no grant, Authorization is never allowed")
    func crossOrigin() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            func preflight(_ path: String, origin: String) async throws -> HeraldClient.Answer {
                try await client.send(
                    "OPTIONS", path, apiKey: nil, body: nil, contentType: nil,
                    headers: [("Origin", origin), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type")])
            }
            let allowed = try await preflight(Paths.v1 + "sendVerificationCode", origin: "https://app.example.com")
            #expect(allowed.status == 204)
            #expect(allowed.header("Access-Control-Allow-Origin") == "https://app.example.com")
            #expect(allowed.header("Access-Control-Allow-Headers")?.contains("authorization") == false)
            let evil = try await preflight(Paths.v1 + "sendVerificationCode", origin: "https://evil.example.net")
            #expect(evil.status == 403)
            #expect(evil.header("Access-Control-Allow-Origin") == nil)
            let adminPath = try await preflight(Self.adminBase + "/accounts:lookup", origin: "https://app.example.com")
            #expect(adminPath.header("Access-Control-Allow-Origin") == nil)
            // A simple request from another page: answered, but the browser is not allowed to read it.
            let simple = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "a@example.com", "continueUri": "http://localhost"],
                headers: [("Origin", "https://evil.example.net")])
            #expect(simple.header("Access-Control-Allow-Origin") == nil)
            // An authorized page reads error answers too (the SDK needs the code).
            let refused = try await client.post(
                Paths.v1 + "sendVerificationCode", apiKey: Self.key, json: ["phoneNumber": "123"], headers: [("Origin", "https://app.example.com")])
            #expect(refused.errorMessage?.hasPrefix("INVALID_PHONE_NUMBER") == true)
            #expect(refused.header("Access-Control-Allow-Origin") == "https://app.example.com")
        }
    }

    @Test("dev and admin endpoints in devMode: only loopback pages and loopback Host names; devMode refuses a non-loopback listener")
    func devModeEndpoints() async throws {
        let harness = try APIHarness { $0.devMode = true }
        try await harness.run { client, _ in
            let codes = "/emulator/v1/projects/\(TestConfiguration.projectID)/verificationCodes"
            let local = try await client.send("GET", codes, apiKey: nil, body: nil, contentType: nil, headers: [("Origin", "http://localhost:3000")])
            #expect(local.status == 200)
            #expect(local.header("Access-Control-Allow-Origin") == "http://localhost:3000")
            let page = try await client.send("GET", codes, apiKey: nil, body: nil, contentType: nil, headers: [("Origin", "https://app.example.com")])
            #expect(page.header("Access-Control-Allow-Origin") == nil)
            let wipe = try await client.send(
                "OPTIONS", "/emulator/v1/projects/\(TestConfiguration.projectID)/accounts", apiKey: nil, body: nil, contentType: nil,
                headers: [("Origin", "https://evil.example.net"), ("Access-Control-Request-Method", "DELETE")])
            #expect(wipe.status == 403)
            // DNS rebinding: a page on evil.example.net whose name now points at 127.0.0.1.
            let rebound = try await client.send("GET", codes, apiKey: nil, body: nil, contentType: nil, headers: [("Host", "evil.example.net:9099")])
            #expect(rebound.status == 403)
            // The same for the admin API and the status page: the admin token is the well-known one in devMode.
            let batchGet = Self.adminBase + "/accounts:batchGet"
            let rebind = ("Host", "rebind.evil.example:9099")
            let listed = try await client.send(
                "GET", batchGet, apiKey: nil, body: nil, contentType: nil, headers: TestConfiguration.adminHeader + [rebind])
            #expect(listed.status == 403)
            #expect(listed.errorMessage?.hasPrefix("INSUFFICIENT_PERMISSION") == true)
            let named = try await client.send("GET", batchGet, apiKey: nil, body: nil, contentType: nil, headers: TestConfiguration.adminHeader)
            #expect(named.status == 200)
            let minted = try await client.post(
                Paths.v1 + "sendOobCode", apiKey: Self.key,
                json: ["requestType": "EMAIL_SIGNIN", "email": "dev-victim@example.com", "returnOobLink": true],
                headers: TestConfiguration.adminHeader + [rebind])
            #expect(minted.status == 403)
            #expect(minted.string("oobLink") == nil)
            let login = try await client.send(
                "POST", "/admin/login", apiKey: nil, body: Data("token=\(TestConfiguration.adminToken)".utf8),
                contentType: "application/x-www-form-urlencoded", headers: [rebind])
            #expect(login.status == 403)
            #expect(login.header("set-cookie") == nil)
            #expect(try await client.send("GET", "/admin/", apiKey: nil, body: nil, contentType: nil, headers: [rebind]).status == 403)
            // Ordinary client calls do not depend on the Host.
            let ordinary = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": "a@example.com", "continueUri": "http://localhost"],
                headers: [rebind])
            #expect(ordinary.status == 200)
        }
        var exposed = TestConfiguration()
        exposed.devMode = true
        exposed.apiHost = "0.0.0.0"
        #expect(throws: ConfigError.self) { try exposed.parsed() }
    }

    @Test("an ID token is accepted in its one spelling: padded or with unused low bits set, it is INVALID_ID_TOKEN")
    func idTokenSpelling() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let idToken = try #require(try await Self.phoneSignIn(client).string("idToken"))
            #expect(try await Self.lookup(client, idToken).status == 200)
            for variant in [idToken + "=", idToken + "==", NonCanonicalJWT.lowBitFlipped(idToken)] {
                #expect(try await Self.lookup(client, variant).errorMessage == "INVALID_ID_TOKEN")
            }
        }
    }

    @Test("a body over 64 KiB is 413 REQUEST_TOO_LARGE, not a 500")
    func oversizedBody() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let answer = try await client.send(
                "POST", Paths.v1 + "sendVerificationCode", apiKey: Self.key, body: Data(repeating: UInt8(ascii: "a"), count: 70_000),
                contentType: "application/json")
            #expect(answer.status == 413)
            #expect(answer.errorMessage == "REQUEST_TOO_LARGE : Request payload size exceeds the limit: 65536 bytes.")
        }
    }

    @Test("createAuthUri: enumeration protection by default, and lookups are limited per client address")
    func accountEnumeration() async throws {
        let harness = try APIHarness {
            $0.emailLink = #"{enabled: true, linkTTL: 1h, actionUrl: "https://auth.example.com/__/auth/action"}"#
            $0.limits = #"{perNumber: ["100/1m"], perIP: ["1000/1m"], perProject: ["10000/1m"], lookupsPerIP: ["2/1m"], pumping: {enabled: false}}"#
        }
        try await harness.run { client, admin in
            _ = try await Self.emailSignIn("gina@example.com", harness: harness, client: client, admin: admin)
            func ask(_ email: String) async throws -> HeraldClient.Answer {
                try await client.post(Paths.v1 + "createAuthUri", apiKey: Self.key, json: ["identifier": email, "continueUri": "http://localhost"])
            }
            let known = try await ask("gina@example.com")
            let unknown = try await ask("nobody@example.com")
            #expect(known.json["registered"] == nil)
            #expect(known.json["signinMethods"] == nil)
            #expect(Set(known.json.keys) == Set(unknown.json.keys))
            let third = try await ask("someone@example.com")
            #expect(third.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(third.header("Retry-After") != nil)
        }
    }
}
