import Foundation
import HeraldAMQP
import HeraldCore
import HeraldTesting
import Testing

/// The account emails over the wire: VERIFY_EMAIL, PASSWORD_RESET and VERIFY_AND_CHANGE_EMAIL queued as
/// email jobs, completed with resetPassword and update(oobCode) as the SDKs send them, and through the
/// action handler's own pages.
@Suite("Account emails: verify, reset, change and recover (real broker, real SQLite)")
struct AccountEmailTests {
    static let key = TestConfiguration.apiKey

    /// The one email job queued since the last call, its template and its link's query.
    static func job(_ harness: APIHarness, _ admin: AMQPConnection) async throws -> (EmailMessage, Job, [String: String]) {
        let jobs = try await harness.publishedEmailJobs(admin)
        guard jobs.count == 1, case .email(let message) = jobs[0].1.payload else { throw TestFailure("expected one email job, got \(jobs.count)") }
        return (message, jobs[0].1, queryItems(try harness.link(in: jobs[0].1)))
    }

    static func send(_ client: HeraldClient, _ json: [String: any Sendable]) async throws -> HeraldClient.Answer {
        try await client.post(Paths.legacy + "getOobConfirmationCode", apiKey: key, json: json)
    }

    @Test("PASSWORD_RESET: a 1-hour single-use link; resetPassword checks it, sets the password and revokes earlier sessions")
    func reset() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let created = try await PasswordAccountTests.signUp(client, "alice@example.com", "first-pass")
            let oldToken = try #require(created.string("idToken"))
            let sent = try await Self.send(client, ["requestType": "PASSWORD_RESET", "email": "Alice@Example.com"])
            #expect(sent.status == 200 && sent.string("email") == "alice@example.com")
            let (message, job, query) = try await Self.job(harness, admin)
            #expect(message.template == .resetPassword && message.to == "alice@example.com")
            #expect(abs(job.expiresAt.timeIntervalSince(job.createdAt) - 3600) < 1)
            #expect(query["mode"] == "resetPassword")
            let code = try #require(query["oobCode"])

            let checked = try await client.post(Paths.legacy + "resetPassword", apiKey: Self.key, json: ["oobCode": code])
            #expect(checked.string("requestType") == "PASSWORD_RESET" && checked.string("email") == "alice@example.com")
            let weak = try await client.post(Paths.v1 + "resetPassword", apiKey: Self.key, json: ["oobCode": code, "newPassword": "12"])
            #expect(weak.errorMessage == "WEAK_PASSWORD : Password should be at least 6 characters")
            let reset = try await client.post(Paths.v1 + "resetPassword", apiKey: Self.key, json: ["oobCode": code, "newPassword": "second-pass"])
            #expect(reset.status == 200, "\(reset.errorMessage ?? "")")
            #expect(reset.string("email") == "alice@example.com")
            let again = try await client.post(Paths.v1 + "resetPassword", apiKey: Self.key, json: ["oobCode": code, "newPassword": "third-pass"])
            #expect(again.errorMessage == "INVALID_OOB_CODE", "single use")

            #expect(try await PasswordAccountTests.signIn(client, "alice@example.com", "first-pass").errorMessage == "INVALID_PASSWORD")
            let signedIn = try await PasswordAccountTests.signIn(client, "alice@example.com", "second-pass")
            #expect(signedIn.status == 200)
            #expect(try await SecurityTests.lookup(client, oldToken).errorMessage == "TOKEN_EXPIRED")
            let newToken = try #require(signedIn.string("idToken"))
            let lookup = try await SecurityTests.lookup(client, newToken)
            let user = try #require((lookup.json["users"] as? [[String: Any]])?.first)
            #expect(user["emailVerified"] as? Bool == true, "opening the mail proved the address")
            // The broker and the logs never carry the code or the password.
            #expect(harness.logs.text.contains(code) == false && harness.logs.text.contains("second-pass") == false)
        }
    }

    @Test("with enumeration protection a reset for an unknown address answers the same and sends nothing")
    func resetUnknownAddress() async throws {
        let harness = try APIHarness {
            $0.emailLink = "{enabled: true, linkTTL: 1h, actionUrl: \"https://auth.example.com/__/auth/action\", enumerationProtection: true}"
        }
        try await harness.run { client, admin in
            #expect(try await PasswordAccountTests.signUp(client, "known@example.com", "known-pass").status == 200)
            let known = try await Self.send(client, ["requestType": "PASSWORD_RESET", "email": "known@example.com"])
            let unknown = try await Self.send(client, ["requestType": "PASSWORD_RESET", "email": "unknown@example.com"])
            #expect(known.status == 200 && unknown.status == 200)
            #expect(Set(known.json.keys) == Set(unknown.json.keys))
            let jobs = try await harness.publishedEmailJobs(admin)
            #expect(jobs.map { if case .email(let m) = $0.1.payload { m.to } else { "" } } == ["known@example.com"])
        }
    }

    @Test("VERIFY_EMAIL with the idToken, applied with update(oobCode); a verified address is not taken over by a link")
    func verify() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let created = try await PasswordAccountTests.signUp(client, "vera@example.com", "veras-pass")
            let token = try #require(created.string("idToken"))
            #expect(try await Self.send(client, ["requestType": "VERIFY_EMAIL"]).errorMessage == "MISSING_ID_TOKEN")
            let sent = try await Self.send(client, ["requestType": "VERIFY_EMAIL", "idToken": token])
            #expect(sent.status == 200 && sent.string("email") == "vera@example.com")
            let (message, job, query) = try await Self.job(harness, admin)
            #expect(message.template == .verifyEmail && query["mode"] == "verifyEmail")
            #expect(abs(job.expiresAt.timeIntervalSince(job.createdAt) - 3 * 86_400) < 1)
            let checked = try await client.post(Paths.v1 + "resetPassword", apiKey: Self.key, json: ["oobCode": try #require(query["oobCode"])])
            #expect(checked.string("requestType") == "VERIFY_EMAIL" && checked.string("email") == "vera@example.com")
            let applied = try await client.post(Paths.legacy + "setAccountInfo", apiKey: Self.key, json: ["oobCode": try #require(query["oobCode"])])
            #expect(applied.status == 200, "\(applied.errorMessage ?? "")")
            #expect(applied.json["emailVerified"] as? Bool == true && applied.string("email") == "vera@example.com")
            #expect(
                try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["oobCode": try #require(query["oobCode"])]).errorMessage
                    == "INVALID_OOB_CODE")

            // Now verified: a link sign-in to the address keeps the password.
            let link = try await EmailLinkTests.sendLink("vera@example.com", harness: harness, client: client, admin: admin)
            let linked = try await client.post(
                Paths.v1 + "signInWithEmailLink", apiKey: Self.key,
                json: ["email": "vera@example.com", "oobCode": try #require(queryItems(link)["oobCode"])])
            #expect(linked.status == 200)
            #expect(try await PasswordAccountTests.signIn(client, "vera@example.com", "veras-pass").status == 200)
        }
    }

    @Test("VERIFY_AND_CHANGE_EMAIL moves the account only when opened; the old address gets a RECOVER_EMAIL link that restores it")
    func changeAndRecover() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            let created = try await PasswordAccountTests.signUp(client, "old@example.com", "change-pass")
            let token = try #require(created.string("idToken"))
            #expect(try await PasswordAccountTests.signUp(client, "taken@example.com", "other-pass").status == 200)
            #expect(
                try await Self.send(client, ["requestType": "VERIFY_AND_CHANGE_EMAIL", "idToken": token, "newEmail": "taken@example.com"])
                    .errorMessage
                    == "EMAIL_EXISTS")
            #expect(try await Self.send(client, ["requestType": "VERIFY_AND_CHANGE_EMAIL", "idToken": token]).errorMessage == "MISSING_NEW_EMAIL")
            let sent = try await Self.send(client, ["requestType": "VERIFY_AND_CHANGE_EMAIL", "idToken": token, "newEmail": "new@example.com"])
            #expect(sent.status == 200 && sent.string("email") == "new@example.com")
            let (message, _, query) = try await Self.job(harness, admin)
            #expect(message.to == "new@example.com" && message.template == .verifyAndChangeEmail && message.params["oldEmail"] == "old@example.com")
            #expect(query["mode"] == "verifyAndChangeEmail")
            let code = try #require(query["oobCode"])
            // Nothing changed yet.
            #expect(try await PasswordAccountTests.signIn(client, "old@example.com", "change-pass").status == 200)
            let checked = try await client.post(Paths.v1 + "resetPassword", apiKey: Self.key, json: ["oobCode": code])
            #expect(checked.string("email") == "old@example.com" && checked.string("newEmail") == "new@example.com")

            let applied = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["oobCode": code])
            #expect(applied.status == 200, "\(applied.errorMessage ?? "")")
            #expect(applied.string("email") == "new@example.com" && applied.json["emailVerified"] as? Bool == true)
            #expect(try await PasswordAccountTests.signIn(client, "new@example.com", "change-pass").status == 200)
            #expect(try await SecurityTests.lookup(client, token).errorMessage == "TOKEN_EXPIRED")

            let (notice, _, recoverQuery) = try await Self.job(harness, admin)
            #expect(notice.to == "old@example.com" && notice.template == .recoverEmail && notice.params["newEmail"] == "new@example.com")
            #expect(recoverQuery["mode"] == "recoverEmail")
            let restored = try await client.post(Paths.v1 + "update", apiKey: Self.key, json: ["oobCode": try #require(recoverQuery["oobCode"])])
            #expect(restored.status == 200, "\(restored.errorMessage ?? "")")
            #expect(restored.string("email") == "old@example.com")
            #expect(try await PasswordAccountTests.signIn(client, "old@example.com", "change-pass").status == 200)
            #expect(try await PasswordAccountTests.signIn(client, "new@example.com", "change-pass").errorMessage == "EMAIL_NOT_FOUND")
        }
    }

    @Test("firebase-admin's generate_password_reset_link and generate_email_verification_link: links only for admins, by address")
    func adminLinks() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            #expect(try await PasswordAccountTests.signUp(client, "ada@example.com", "adas-pass").status == 200)
            let path = "/v1/projects/\(TestConfiguration.projectID)/accounts:sendOobCode"
            for type in ["PASSWORD_RESET", "VERIFY_EMAIL"] {
                let answer = try await client.post(
                    path, json: ["requestType": type, "email": "ada@example.com", "returnOobLink": true], headers: TestConfiguration.adminHeader)
                #expect(answer.status == 200, "\(answer.errorMessage ?? "")")
                let link = try #require(answer.string("oobLink"))
                #expect(queryItems(link)["mode"] == (type == "PASSWORD_RESET" ? "resetPassword" : "verifyEmail"))
                #expect(queryItems(link)["oobCode"] == answer.string("oobCode"))
            }
            let unknown = try await client.post(
                path, json: ["requestType": "VERIFY_EMAIL", "email": "nobody@example.com", "returnOobLink": true],
                headers: TestConfiguration.adminHeader)
            #expect(unknown.errorMessage == "USER_NOT_FOUND")
            #expect(try await harness.publishedEmailJobs(admin).isEmpty, "an admin's link is delivered by the admin")
        }
    }

    @Test("the action handler's pages: nothing changes on GET; a POST needs the page's token and this origin; in-app links redirect")
    func actionPages() async throws {
        let harness = try APIHarness()
        try await harness.run { client, admin in
            #expect(try await PasswordAccountTests.signUp(client, "page@example.com", "page-pass-1").status == 200)
            #expect(
                try await Self.send(
                    client, ["requestType": "PASSWORD_RESET", "email": "page@example.com", "continueUrl": "https://app.example.com/done"]
                ).status == 200)
            let (_, job, query) = try await Self.job(harness, admin)
            let link = try harness.link(in: job)
            let path = "/__/auth/action?" + (link.split(separator: "?", maxSplits: 1).last.map(String.init) ?? "")
            let page = try await client.get(path)
            #expect(page.status == 200)
            #expect(page.header("content-security-policy")?.contains("script-src 'none'") == true)
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(html.contains("name=\"newPassword\"") && html.contains("page@example.com"))
            let token = try #require(html.range(of: "name=\"token\" value=\"").map { html[$0.upperBound...].prefix { $0 != "\"" } })
            let code = try #require(query["oobCode"])
            // Fetching the page twice changed nothing.
            #expect(try await client.get(path).status == 200)

            func post(_ fields: [(String, String)], headers: [(String, String)] = []) async throws -> HeraldClient.Answer {
                let form = fields.map { "\($0.0)=\(SignInLink.percentEncode($0.1))" }.joined(separator: "&")
                return try await client.send(
                    "POST", "/__/auth/action", apiKey: nil, body: Data(form.utf8), contentType: "application/x-www-form-urlencoded", headers: headers)
            }
            let fields = [
                ("mode", "resetPassword"), ("oobCode", code), ("apiKey", Self.key), ("continueUrl", "https://app.example.com/done"),
                ("newPassword", "page-pass-2"),
            ]
            #expect(try await post(fields + [("token", "forged")]).status == 403)
            #expect(try await post(fields + [("token", String(token))], headers: [("Sec-Fetch-Site", "cross-site")]).status == 403)
            #expect(try await post(fields + [("token", String(token))], headers: [("Origin", "https://evil.example")]).status == 403)
            #expect(try await PasswordAccountTests.signIn(client, "page@example.com", "page-pass-1").status == 200, "nothing changed yet")
            let done = try await post(fields + [("token", String(token))])
            #expect(done.status == 200)
            #expect(String(decoding: done.body, as: UTF8.self).contains("href=\"https://app.example.com/done\""))
            #expect(try await PasswordAccountTests.signIn(client, "page@example.com", "page-pass-2").status == 200)
            #expect(try await client.get(path).status == 400, "a spent code's page says so")

            // A link the app handles goes to the continue URL with its parameters.
            #expect(
                try await Self.send(
                    client,
                    [
                        "requestType": "PASSWORD_RESET", "email": "page@example.com", "continueUrl": "https://app.example.com/done",
                        "canHandleCodeInApp": true,
                    ]
                ).status == 200)
            let (_, inAppJob, _) = try await Self.job(harness, admin)
            let inApp = try harness.link(in: inAppJob)
            let redirect = try await client.get("/__/auth/action?" + (inApp.split(separator: "?", maxSplits: 1).last.map(String.init) ?? ""))
            #expect(redirect.status == 303)
            #expect(redirect.header("location")?.hasPrefix("https://app.example.com/done?") == true)
            #expect(redirect.header("location")?.contains("mode=resetPassword") == true)
        }
    }
}
