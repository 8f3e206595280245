import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing

/// Query parameters of a URL.
func queryItems(_ url: String) -> [String: String] {
    Dictionary((URLComponents(string: url)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
}

@Suite("Email-link sign-in and accounts over the Identity Toolkit wire (real broker, real SQLite)")
struct EmailLinkTests {
    let key = TestConfiguration.apiKey
    static let continueURL = "https://app.example.com/finish?cart=1&x=a%20b"

    /// Sends a link to `email` and returns the link the queued job carries.
    static func sendLink(
        _ email: String, harness: APIHarness, client: HeraldClient, admin: AMQPConnection, path: String = Paths.v1 + "sendOobCode",
        headers: [(String, String)] = []
    ) async throws -> String {
        let sent = try await client.post(
            path, apiKey: TestConfiguration.apiKey,
            json: [
                "requestType": "EMAIL_SIGNIN", "email": email, "continueUrl": continueURL, "canHandleCodeInApp": true,
                "iOSBundleId": "com.example.herald",
            ],
            headers: headers)
        guard sent.status == 200 else { throw TestFailure("sendOobCode: \(sent.status) \(sent.errorMessage ?? "")") }
        let jobs = try await harness.publishedEmailJobs(admin)
        guard jobs.count == 1 else { throw TestFailure("expected one email job, got \(jobs.count)") }
        return try harness.link(in: jobs[0].1)
    }

    @Test("sendOobCode (v1 and legacy) → confirmed email job with the sealed link in Firebase's format → signInWithEmailLink")
    func fullFlow() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let sent = try await client.post(
                Paths.legacy + "getOobConfirmationCode", apiKey: key,
                json: ["requestType": "EMAIL_SIGNIN", "email": " Alice@Example.COM ", "continueUrl": Self.continueURL, "canHandleCodeInApp": true],
                headers: [("X-Firebase-Locale", "de")])
            #expect(sent.status == 200)
            #expect(sent.string("kind") == "identitytoolkit#GetOobConfirmationCodeResponse")
            #expect(sent.string("email") == "alice@example.com")
            #expect(sent.json["oobLink"] == nil && sent.json["oobCode"] == nil)

            let jobs = try await harness.publishedEmailJobs(admin)
            try #require(jobs.count == 1)
            let (delivery, job) = jobs[0]
            #expect(delivery.type == "email")
            #expect(job.locale == "de")
            #expect(abs(job.expiresAt.timeIntervalSince(job.createdAt) - 3600) < 1)
            guard case .email(let message) = job.payload else {
                Issue.record("not an email job")
                return
            }
            #expect(message.to == "alice@example.com")
            #expect(message.template == .signInLink)
            let link = try harness.link(in: job)
            #expect(link.hasPrefix("https://auth.example.com/__/auth/action?apiKey=\(key)&mode=signIn&oobCode="))
            let query = queryItems(link)
            #expect(query["mode"] == "signIn")
            #expect(query["continueUrl"] == "https://app.example.com/finish?cart=1&x=a%20b")
            #expect(query["lang"] == "de")
            let code = try #require(query["oobCode"])
            #expect(code.count == 54)
            // The broker holds only the sealed link.
            #expect(String(decoding: delivery.body, as: UTF8.self).contains(code) == false)

            let signedIn = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "alice@example.com", "oobCode": code])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("kind") == "identitytoolkit#EmailLinkSigninResponse")
            #expect(signedIn.json["isNewUser"] as? Bool == true)
            #expect(signedIn.string("expiresIn") == "3600")
            let idToken = try #require(signedIn.string("idToken"))
            let lookup = try await client.post(Paths.legacy + "getAccountInfo", apiKey: key, json: ["idToken": idToken])
            let user = try #require((lookup.json["users"] as? [[String: Any]])?.first)
            #expect(user["email"] as? String == "alice@example.com")
            #expect(user["emailVerified"] as? Bool == true)
            #expect(user["localId"] as? String == signedIn.string("localId"))

            // Single use.
            let again = try await client.post(Paths.legacy + "emailLinkSignin", apiKey: key, json: ["email": "alice@example.com", "oobCode": code])
            #expect(again.errorMessage == "INVALID_OOB_CODE")
            // A second link for the same address finds the same user.
            let second = try await Self.sendLink("alice@example.com", harness: harness, client: client, admin: admin)
            let signedInAgain = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "ALICE@example.com", "oobCode": queryItems(second)["oobCode"]!])
            #expect(signedInAgain.json["isNewUser"] as? Bool == false)
            #expect(signedInAgain.string("localId") == signedIn.string("localId"))
            #expect(linesLeaking([code, queryItems(second)["oobCode"]!], in: harness.logs.text).isEmpty)
        }
    }

    @Test("request errors: missing/invalid fields, continue URL checks, disabled project, admin-only returnOobLink")
    func requestErrors() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            func send(_ body: [String: any Sendable], key: String = TestConfiguration.apiKey) async throws -> String? {
                try await client.post(Paths.v1 + "sendOobCode", apiKey: key, json: body).errorMessage
            }
            let url = Self.continueURL
            #expect(try await send(["email": "a@example.com", "continueUrl": url]) == "MISSING_REQ_TYPE")
            #expect(try await send(["requestType": "EMAIL_SIGNIN", "continueUrl": url]) == "MISSING_EMAIL")
            #expect(try await send(["requestType": "EMAIL_SIGNIN", "email": "not-an-address", "continueUrl": url]) == "INVALID_EMAIL")
            #expect(try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com"]) == "MISSING_CONTINUE_URI")
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": "/relative/path"])
                    == "INVALID_CONTINUE_URI : ((expected an absolute URI with valid scheme and host))")
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": "https://evil.example.net/x"])
                    == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
            // Authorized domains match exactly: neither a subdomain nor a look-alike suffix is authorized.
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": "https://user-pages.app.example.com/"])
                    == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": "https://notapp.example.com.evil.net/"])
                    == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": url, "linkDomain": "links.evil.net"])
                    == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": url], key: TestConfiguration.disabledAPIKey)
                    == "OPERATION_NOT_ALLOWED")
            #expect(
                try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": url, "returnOobLink": true])
                    == "INSUFFICIENT_PERMISSION")
            #expect(try await send(["requestType": "PASSWORD_RESET", "email": "a@example.com"]) == "EMAIL_NOT_FOUND", "protection is off here")
            #expect(try await send(["requestType": "RECOVER_EMAIL", "email": "a@example.com"])?.hasPrefix("NOT_IMPLEMENTED") == true)
            #expect(try await send(["requestType": "BOGUS", "email": "a@example.com"]) == "INVALID_REQ_TYPE", "not a request type at all: 400")
            #expect(try await harness.publishedEmailJobs(admin).isEmpty)

            // A link domain must be actionUrl's host or a listed link domain, exactly, even under an authorized domain.
            for host in ["app.example.com", "user-pages.auth.example.com", "ａttacker.app.example.com", "auth.example.com."] {
                #expect(
                    try await send(["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": url, "linkDomain": host])
                        == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project", "\(host)")
            }
            #expect(
                try await send([
                    "requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": url, "linkDomain": "Auth.Example.com",
                ]) == nil)
            let link = try harness.link(in: try #require(try await harness.publishedEmailJobs(admin).first).1)
            #expect(link.hasPrefix("https://auth.example.com/__/auth/action?"))
        }
    }

    @Test("link domains listed in emailLink.linkDomains and continue URLs under a *.domain entry are accepted")
    func listedDomains() async throws {
        let harness = try APIHarness {
            $0.authorizedDomains = ["localhost", "app.example.com", "\"*.shop.example.com\""]
            $0.emailLink = #"{enabled: true, linkTTL: 1h, actionUrl: "https://auth.example.com/__/auth/action", linkDomains: [links.example.com]}"#
        }
        try await harness.run { client, admin in
            func send(_ continueURL: String, linkDomain: String) async throws -> String? {
                try await client.post(
                    Paths.v1 + "sendOobCode", apiKey: TestConfiguration.apiKey,
                    json: ["requestType": "EMAIL_SIGNIN", "email": "a@example.com", "continueUrl": continueURL, "linkDomain": linkDomain]
                ).errorMessage
            }
            #expect(try await send("https://m.shop.example.com/done", linkDomain: "links.example.com") == nil)
            let link = try harness.link(in: try #require(try await harness.publishedEmailJobs(admin).first).1)
            #expect(link.hasPrefix("https://links.example.com/__/auth/action?"))
            #expect(
                try await send("https://shop.example.com/done", linkDomain: "links.example.com")
                    == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
            #expect(
                try await send("https://m.shop.example.com/", linkDomain: "x.links.example.com")
                    == "UNAUTHORIZED_DOMAIN : Domain not allowlisted by project")
        }
        var invalid = TestConfiguration()
        invalid.emailLink = #"{enabled: true, actionUrl: "https://auth.example.com/__/auth/action", linkDomains: ["ａttacker.example.com"]}"#
        #expect { try invalid.parsed() } throws: { ($0 as? ConfigError)?.key == "projects[0].emailLink.linkDomains[0]" }
    }

    @Test("signInWithEmailLink: same-email rule, unknown code, expiry with an injected clock, missing fields")
    func signInErrors() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let link = try await Self.sendLink("bob@example.com", harness: harness, client: client, admin: admin)
            let code = try #require(queryItems(link)["oobCode"])
            func signIn(_ body: [String: any Sendable], key: String = TestConfiguration.apiKey) async throws -> String? {
                try await client.post(Paths.v1 + "signInWithEmailLink", apiKey: key, json: body).errorMessage
            }
            #expect(try await signIn(["oobCode": code]) == "MISSING_EMAIL")
            #expect(try await signIn(["email": "bob@example.com"]) == "MISSING_OOB_CODE")
            let altered = (code.hasPrefix("x") ? "y" : "x") + code.dropFirst()
            #expect(try await signIn(["email": "bob@example.com", "oobCode": altered]) == "INVALID_OOB_CODE")
            #expect(
                try await signIn(["email": "mallory@example.com", "oobCode": code])
                    == "INVALID_EMAIL : The email provided does not match the sign-in email address.")
            #expect(
                try await signIn(["email": "bob@example.com", "oobCode": code], key: TestConfiguration.disabledAPIKey) == "OPERATION_NOT_ALLOWED")
            // A wrong email does not spend the code; expiry does.
            harness.clock.advance(3600 + 1)
            #expect(try await signIn(["email": "bob@example.com", "oobCode": code]) == "EXPIRED_OOB_CODE")
        }
    }

    @Test("GET on the action URL never consumes the code; it redirects to continueUrl with the link's parameters")
    func prefetchDoesNotConsume() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let link = try await Self.sendLink("carol@example.com", harness: harness, client: client, admin: admin)
            let path = String(link.dropFirst("https://auth.example.com".count))
            for _ in 0..<3 {
                let fetched = try await client.get(path)
                #expect(fetched.status == 303)
                let location = try #require(fetched.header("location"))
                #expect(location.hasPrefix("https://app.example.com/finish?cart=1&x=a%20b&apiKey=\(key)&mode=signIn&oobCode="))
                #expect(queryItems(location)["oobCode"] == queryItems(link)["oobCode"])
            }
            // The emulator path works the same way.
            #expect(try await client.get("/emulator/action" + path.dropFirst("/__/auth/action".count)).status == 303)
            // A forged link pointing elsewhere is refused, not redirected.
            let forged = path.replacingOccurrences(of: "app.example.com", with: "evil.example.net")
            #expect(try await client.get(forged).status == 400)
            let signedIn = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "carol@example.com", "oobCode": queryItems(link)["oobCode"]!])
            #expect(signedIn.status == 200)
        }
    }

    @Test("an email link removes the password of an unverified account and revokes its older sessions")
    func unverifiedPasswordRemoved() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let owner = TestConfiguration.adminHeader
            let base = "/identitytoolkit.googleapis.com/v1/projects/\(TestConfiguration.projectID)"
            let created = try await client.post(base + "/accounts", json: ["email": "dave@example.com", "password": "hunter22"], headers: owner)
            #expect(created.status == 200)
            let localID = try #require(created.string("localId"))
            let methods = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: key, json: ["identifier": "dave@example.com", "continueUri": "http://localhost"])
            #expect(methods.json["signinMethods"] as? [String] == ["password"])
            #expect(methods.json["registered"] as? Bool == true)

            // The link proves the address: the password is removed and validSince set.
            let first = try await Self.sendLink("dave@example.com", harness: harness, client: client, admin: admin)
            let firstSignIn = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "dave@example.com", "oobCode": queryItems(first)["oobCode"]!])
            #expect(firstSignIn.string("localId") == localID)
            #expect(firstSignIn.json["isNewUser"] as? Bool == false)
            let after = try await client.post(
                Paths.v1 + "createAuthUri", apiKey: key, json: ["identifier": "dave@example.com", "continueUri": "http://localhost"])
            #expect(after.json["signinMethods"] as? [String] == ["emailLink"])
            let lookup = try await client.post(base + "/accounts:lookup", json: ["localId": [localID]], headers: owner)
            let user = try #require((lookup.json["users"] as? [[String: Any]])?.first)
            #expect(user["emailVerified"] as? Bool == true)
            #expect(user["validSince"] as? String != nil)
            #expect(user["passwordHash"] == nil)
            // The session the link opened works (it is not older than validSince).
            let idToken = try #require(firstSignIn.string("idToken"))
            #expect(try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": idToken]).status == 200)
        }
    }

    @Test("older sessions of the unverified account answer TOKEN_EXPIRED after the link proved the address")
    func olderSessionsRevoked() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let owner = TestConfiguration.adminHeader
            let base = "/identitytoolkit.googleapis.com/v1/projects/\(TestConfiguration.projectID)"
            // An account with a phone number (so it can have a session) and an unverified email + password.
            let created = try await client.post(
                base + "/accounts", json: ["email": "erin@example.com", "password": "hunter22", "phoneNumber": "+16505553434"], headers: owner)
            #expect(created.status == 200)
            let phoneSession = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+16505553434"])
            let old = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": phoneSession.string("sessionInfo")!, "code": "654321"])
            let oldToken = try #require(old.string("idToken"))
            let oldRefresh = try #require(old.string("refreshToken"))
            harness.clock.advance(2)

            let link = try await Self.sendLink("erin@example.com", harness: harness, client: client, admin: admin)
            let signedIn = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "erin@example.com", "oobCode": queryItems(link)["oobCode"]!])
            #expect(signedIn.string("localId") == created.string("localId"))
            #expect(try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": oldToken]).errorMessage == "TOKEN_EXPIRED")
            #expect(
                try await client.post(Paths.token, apiKey: key, json: ["grantType": "refresh_token", "refreshToken": oldRefresh]).errorMessage
                    == "TOKEN_EXPIRED")
            #expect(try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": signedIn.string("idToken")!]).status == 200)
        }
    }

    @Test("signInWithEmailLink with idToken links the address to the signed-in user; EMAIL_EXISTS when another owns it")
    func linking() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let phoneSession = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+16505553434"])
            let phoneUser = try await client.post(
                Paths.v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": phoneSession.string("sessionInfo")!, "code": "654321"])
            let idToken = try #require(phoneUser.string("idToken"))

            let link = try await Self.sendLink("frank@example.com", harness: harness, client: client, admin: admin)
            let linked = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key,
                json: ["email": "frank@example.com", "oobCode": queryItems(link)["oobCode"]!, "idToken": idToken])
            #expect(linked.status == 200)
            #expect(linked.string("localId") == phoneUser.string("localId"))
            let user = try #require(
                (try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": linked.string("idToken")!]).json["users"]
                    as? [[String: Any]])?.first)
            #expect(user["phoneNumber"] as? String == "+16505553434")
            #expect(user["email"] as? String == "frank@example.com")

            // Someone else signs up with grace@…; linking grace@ to the phone user is refused before the code is spent.
            let other = try await Self.sendLink("grace@example.com", harness: harness, client: client, admin: admin)
            _ = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "grace@example.com", "oobCode": queryItems(other)["oobCode"]!])
            let third = try await Self.sendLink("grace@example.com", harness: harness, client: client, admin: admin)
            let conflict = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key,
                json: ["email": "grace@example.com", "oobCode": queryItems(third)["oobCode"]!, "idToken": linked.string("idToken")!])
            #expect(conflict.errorMessage == "EMAIL_EXISTS")
            let unlinked = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "grace@example.com", "oobCode": queryItems(third)["oobCode"]!])
            #expect(unlinked.status == 200)
        }
    }

    @Test("createAuthUri: methods, unregistered, validation, and enumeration protection")
    func createAuthUri() async throws {
        for protection in [false, true] {
            let harness = try APIHarness {
                $0.emailLink =
                    "{enabled: true, linkTTL: 1h, actionUrl: \"https://auth.example.com/__/auth/action\", enumerationProtection: \(protection)}"
            }
            try await harness.run { client, admin in
                let link = try await Self.sendLink("heidi@example.com", harness: harness, client: client, admin: admin)
                _ = try await client.post(
                    Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "heidi@example.com", "oobCode": queryItems(link)["oobCode"]!])
                func ask(_ body: [String: any Sendable]) async throws -> HeraldClient.Answer {
                    try await client.post(Paths.legacy + "createAuthUri", apiKey: key, json: body)
                }
                let known = try await ask(["identifier": "heidi@example.com", "continueUri": "http://localhost"])
                let unknown = try await ask(["identifier": "nobody@example.com", "continueUri": "http://localhost"])
                #expect(known.string("kind") == "identitytoolkit#CreateAuthUriResponse")
                #expect(known.string("sessionId")?.count == 27)
                if protection {
                    #expect(Set(known.json.keys) == ["kind", "sessionId"])
                    #expect(Set(unknown.json.keys) == ["kind", "sessionId"])
                } else {
                    #expect(known.json["signinMethods"] as? [String] == ["emailLink"])
                    #expect(known.json["registered"] as? Bool == true)
                    #expect(unknown.json["registered"] as? Bool == false)
                    #expect(unknown.json["signinMethods"] == nil)
                }
                #expect(try await ask(["continueUri": "http://localhost"]).errorMessage == "MISSING_IDENTIFIER")
                #expect(try await ask(["identifier": "heidi@example.com"]).errorMessage == "MISSING_CONTINUE_URI")
                #expect(try await ask(["identifier": "not an email", "continueUri": "http://localhost"]).errorMessage == "INVALID_IDENTIFIER")
            }
        }
    }

    @Test("per-mailbox limit on sign-in emails: TOO_MANY_ATTEMPTS_TRY_LATER with Retry-After, nothing published; +tags and Gmail dots fold")
    func perAddressLimit() async throws {
        let harness = try APIHarness { $0.limits = "{perEmail: [\"2/1h\"], perIP: [\"1000/1m\"], pumping: {enabled: false}}" }
        try await harness.run { client, admin in
            let body: [String: any Sendable] = ["requestType": "EMAIL_SIGNIN", "email": "ivan@example.com", "continueUrl": Self.continueURL]
            for _ in 0..<2 { #expect(try await client.post(Paths.v1 + "sendOobCode", apiKey: key, json: body).status == 200) }
            let refused = try await client.post(Paths.v1 + "sendOobCode", apiKey: key, json: body)
            #expect(refused.errorMessage == "TOO_MANY_ATTEMPTS_TRY_LATER")
            #expect(refused.header("retry-after") != nil)
            var other = body
            other["email"] = "judy@example.com"
            #expect(try await client.post(Paths.v1 + "sendOobCode", apiKey: key, json: other).status == 200)
            #expect(try await harness.publishedEmailJobs(admin).count == 3)
            // One mailbox under other spellings shares the allowance: +tags, and dots at Gmail.
            var tagged = body
            for address in ["ivan+1@example.com", "Ivan+shop@Example.com", "j.u.d.y@example.com"] {
                tagged["email"] = address
                let answer = try await client.post(Paths.v1 + "sendOobCode", apiKey: key, json: tagged)
                #expect(answer.errorMessage == (address.hasPrefix("j.") ? nil : "TOO_MANY_ATTEMPTS_TRY_LATER"), "\(address)")
            }
            for address in ["max.power@gmail.com", "maxpower+x@googlemail.com", "m.a.x.p.o.w.e.r@gmail.com"] {
                tagged["email"] = address
                let answer = try await client.post(Paths.v1 + "sendOobCode", apiKey: key, json: tagged)
                #expect(answer.errorMessage == (address == "m.a.x.p.o.w.e.r@gmail.com" ? "TOO_MANY_ATTEMPTS_TRY_LATER" : nil), "\(address)")
            }
            // Mail goes to the address as typed.
            let mailed = try await harness.publishedEmailJobs(admin).compactMap { job -> String? in
                if case .email(let message) = job.1.payload { message.to } else { nil }
            }
            #expect(Set(mailed) == ["j.u.d.y@example.com", "max.power@gmail.com", "maxpower+x@googlemail.com"])
        }
    }

    @Test("accounts: update displayName/deleteProvider, delete by idToken and by admin, admin-only fields, admin auth")
    func accountOperations() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let link = try await Self.sendLink("kim@example.com", harness: harness, client: client, admin: admin)
            let signedIn = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: key, json: ["email": "kim@example.com", "oobCode": queryItems(link)["oobCode"]!])
            let idToken = try #require(signedIn.string("idToken"))
            let updated = try await client.post(Paths.legacy + "setAccountInfo", apiKey: key, json: ["idToken": idToken, "displayName": "Kim"])
            #expect(updated.string("kind") == "identitytoolkit#SetAccountInfoResponse")
            #expect(updated.string("displayName") == "Kim")
            #expect(
                try await client.post(Paths.v1 + "update", apiKey: key, json: ["displayName": "x"]).errorMessage
                    == "INVALID_REQ_TYPE : Unsupported request parameters.")
            #expect(
                try await client.post(Paths.v1 + "update", apiKey: key, json: ["idToken": idToken, "emailVerified": false]).errorMessage
                    == "INSUFFICIENT_PERMISSION")
            #expect(try await client.post(Paths.v1 + "lookup", apiKey: key, json: [:]).errorMessage == "MISSING_ID_TOKEN")
            #expect(try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": "garbage"]).errorMessage == "INVALID_ID_TOKEN")

            let base = "/identitytoolkit.googleapis.com/v1/projects/\(TestConfiguration.projectID)"
            #expect(try await client.post(base + "/accounts", json: ["email": "x@example.com"]).errorMessage == "INSUFFICIENT_PERMISSION")
            #expect(
                try await client.post(base + "/accounts", json: ["email": "x@example.com"], headers: [("Authorization", "Bearer wrong")]).status
                    == 403)
            let owner = TestConfiguration.adminHeader
            #expect(try await client.post(base + "/accounts", json: ["email": "kim@example.com"], headers: owner).errorMessage == "EMAIL_EXISTS")
            #expect(
                try await client.post(base + "/accounts", json: ["email": "y@example.com", "password": "short"], headers: owner).errorMessage
                    == "WEAK_PASSWORD : Password should be at least 6 characters")
            let page = try await client.send(
                "GET", base + "/accounts:batchGet?maxResults=10", apiKey: nil, body: nil, contentType: nil, headers: owner)
            #expect((page.json["users"] as? [[String: Any]])?.count == 1)

            let deleted = try await client.post(Paths.legacy + "deleteAccount", apiKey: key, json: ["idToken": idToken])
            #expect(deleted.string("kind") == "identitytoolkit#DeleteAccountResponse")
            #expect(try await client.post(Paths.v1 + "lookup", apiKey: key, json: ["idToken": idToken]).errorMessage == "USER_NOT_FOUND")
            #expect(try await client.post(base + "/accounts:delete", json: ["localId": "nobody"], headers: owner).errorMessage == "USER_NOT_FOUND")
        }
    }
}
