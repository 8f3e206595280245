import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// herald-api and herald-email-worker as real processes, a real SMTP server (aiosmtpd, parsing every
/// message with Python's email package), the real broker and SQLite.
@Suite("Email-link sign-in end to end (herald-api, herald-email-worker, aiosmtpd)", .serialized)
struct EmailEndToEndTests {
    static let v1 = "/identitytoolkit.googleapis.com/v1/accounts:"

    static func sendLink(_ stack: StackHarness, to email: String, locale: String? = nil) async throws {
        let answer = try await stack.client.post(
            v1 + "sendOobCode", apiKey: TestConfiguration.apiKey,
            json: [
                "requestType": "EMAIL_SIGNIN", "email": email, "continueUrl": "https://app.example.com/finish?next=%2Fhome",
                "canHandleCodeInApp": true,
            ],
            headers: locale.map { [("X-Firebase-Locale", $0)] } ?? [])
        guard answer.status == 200 else { throw TestFailure("sendOobCode: \(answer.status) \(answer.errorMessage ?? "")") }
    }

    static func waitForMail(_ sink: SMTPSink, count: Int = 1, _ stack: StackHarness) async throws -> [ReceivedMail] {
        guard await eventually(timeout: .seconds(30), { sink.accepted.count >= count }) else {
            throw TestFailure("SMTP server got \(sink.accepted.count) of \(count) mails; worker output:\n\(stack.allOutput.suffix(4000))")
        }
        return sink.accepted
    }

    @Test(
        "the mail: headers, multipart/alternative (text then HTML), UTF-8 quoted-printable, RFC 2047 subject, EHLO; its link signs in",
        arguments: TestStore.allCases)
    func mailAndSignIn(_ store: TestStore) async throws {
        let sink = try await SMTPSink.start()
        defer { sink.stop() }
        try await StackHarness.run(
            store: store,
            configure: {
                $0.smtpURL = sink.url
                $0.devMode = true
            }
        ) { stack in
            try await stack.startAPI()
            try await stack.startEmailWorker()
            try await Self.sendLink(stack, to: "Alice@Example.com", locale: "fr-CA")
            let mail = try #require(try await Self.waitForMail(sink, stack).first)

            #expect(mail.ehlo == "herald.test")
            #expect(mail.mailFrom == "no-reply@herald.test")
            #expect(mail.recipients == ["alice@example.com"])
            #expect(mail.header("From") == "Herald Test <no-reply@herald.test>")
            #expect(mail.header("To") == "alice@example.com")
            #expect(mail.header("Subject") == "Connexion à Herald Test")
            #expect(mail.rawSubject?.hasPrefix("=?UTF-8?B?") == true)
            #expect(mail.header("MIME-Version") == "1.0")
            #expect(mail.header("Auto-Submitted") == "auto-generated")
            let messageID = try #require(mail.header("Message-ID"))
            #expect(messageID.hasPrefix("<") && messageID.hasSuffix("@herald.test>") && messageID.count > 30)
            let date = try #require(mail.header("Date"))
            #expect(date.range(of: #"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$"#, options: .regularExpression) != nil)
            #expect(mail.headerCounts == ["From": 1, "Date": 1, "Message-ID": 1, "To": 1, "Subject": 1])
            #expect(mail.contentType == "multipart/alternative")
            #expect(mail.partOrder == ["text/plain", "text/html"])
            #expect(mail.defects.isEmpty)
            #expect(mail.maxLineLength <= 78)
            #expect(mail.hasBareLF == false)
            let text = try #require(mail.part("text/plain"))
            let html = try #require(mail.part("text/html"))
            #expect(text.charset == "utf-8" && html.charset == "utf-8")
            #expect(text.transferEncoding == "quoted-printable" && html.transferEncoding == "quoted-printable")
            #expect(text.body.contains("Nous avons reçu une demande de connexion à Herald Test avec cette adresse e-mail (alice@example.com)."))

            // The link in the text part decodes back to the code the API stored (devMode's oobCodes listing).
            let link = try #require(mail.link)
            let code = try #require(queryItems(link)["oobCode"])
            let listed = try await stack.client.get("/emulator/v1/projects/\(TestConfiguration.projectID)/oobCodes")
            let entries = try #require(listed.json["oobCodes"] as? [[String: Any]])
            #expect(entries.count == 1)
            #expect(entries.first?["oobCode"] as? String == code)
            #expect(entries.first?["oobLink"] as? String == link)
            #expect(queryItems(link)["continueUrl"] == "https://app.example.com/finish?next=%2Fhome")
            #expect(queryItems(link)["lang"] == "fr-CA")
            // The HTML part carries the same link, HTML-escaped in the href.
            #expect(html.body.contains("href=\"\(link.replacingOccurrences(of: "&", with: "&amp;"))\""))

            // A link scanner fetching it first does not spend it.
            let path = String(link.dropFirst("https://auth.example.com".count))
            #expect(try await stack.client.get(path).status == 303)
            let signedIn = try await stack.client.post(
                Self.v1 + "signInWithEmailLink", apiKey: TestConfiguration.apiKey, json: ["email": "alice@example.com", "oobCode": code])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("idToken") != nil)

            let jobs = try await stack.store.deliveryStatus(jobID: try #require(Self.jobID(in: stack)))
            #expect(jobs?.status == .sent)
            #expect(sink.attempts == 1)
            #expect(linesLeaking([code], in: stack.allOutput).isEmpty)
        }
    }

    /// Waits for the one dead-lettered email job and takes it off the queue.
    static func deadLetter(_ stack: StackHarness) async throws -> AMQPDelivery {
        let deadQueue = stack.topology.deadQueue(.email)
        guard await eventually(timeout: .seconds(30), { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 }),
            let dead = try await TestBroker.drain(deadQueue, using: stack.admin).first
        else { throw TestFailure("no dead-lettered email job; worker output:\n\(stack.allOutput.suffix(4000))") }
        return dead
    }

    /// The id of the (only) email job, from the worker's log.
    static func jobID(in stack: StackHarness) -> UUID? {
        guard let range = stack.allOutput.range(of: #""job.id":"[0-9a-f-]{36}""#, options: .regularExpression) else { return nil }
        return UUID(uuidString: String(stack.allOutput[range].dropFirst(10).dropLast()))
    }

    @Test("SMTP 451 then 250: retried through the delay queue, exactly one mail; 550: dead-lettered with the reply text")
    func transientAndPermanentReplies() async throws {
        let sink = try await SMTPSink.start(replies: ["451 4.3.0 Try again later", "250 2.0.0 OK", "550 5.1.1 No such user here"])
        defer { sink.stop() }
        try await StackHarness.run(configure: { $0.smtpURL = sink.url }) { stack in
            try await stack.startAPI()
            try await stack.startEmailWorker()
            try await Self.sendLink(stack, to: "bob@example.com")
            let mails = try await Self.waitForMail(sink, stack)
            #expect(mails.count == 1)
            #expect(sink.attempts == 2)
            let first = try #require(Self.jobID(in: stack))
            #expect(await eventually { (try? await stack.store.deliveryStatus(jobID: first))?.status == .sent })
            #expect(try await stack.store.deliveryStatus(jobID: first)?.attempts == 2)

            try await Self.sendLink(stack, to: "nobody@example.com")
            let dead = try await Self.deadLetter(stack)
            guard case .string(let reason) = dead.headers["x-herald-reason"] else {
                Issue.record("no reason header")
                return
            }
            #expect(reason.contains("550 5.1.1 No such user here"))
            // Nothing more arrives: no resend of the first, no retry of the refused one.
            try await Task.sleep(for: .seconds(2))
            #expect(sink.accepted.count == 1)
            #expect(sink.attempts == 3)
        }
    }

    @Test("STARTTLS required + AUTH + caFile: delivered encrypted and authenticated; smtps:// likewise")
    func tlsAndAuth() async throws {
        for security in [SMTPSink.Security.startTLS, .implicitTLS] {
            let sink = try await SMTPSink.start(security: security, login: "herald:s3cret-pass")
            defer { sink.stop() }
            try await StackHarness.run(configure: {
                $0.smtpURL = sink.url
                $0.smtpExtra =
                    "requireTLS: \(security == .startTLS), caFile: \"\(TestTLS.shared.caFile)\", username: herald, password: \"s3cret-pass\""
            }) { stack in
                try await stack.startAPI()
                try await stack.startEmailWorker()
                try await Self.sendLink(stack, to: "tls@example.com")
                _ = try await Self.waitForMail(sink, stack)
                let data = try #require(sink.events("data").first)
                #expect(data["tls"] as? Bool == true)
                #expect(data["authenticated"] as? Bool == true)
                #expect(sink.events("auth").first?["ok"] as? Bool == true)
                #expect(stack.allOutput.contains("s3cret-pass") == false)
            }
        }
    }

    @Test(
        "refused before DATA, dead-lettered with the reason, nothing sent in the clear",
        arguments: [
            // requireTLS against a server that does not offer STARTTLS.
            (SMTPSink.Security.plain, "requireTLS: true", "the SMTP server did not offer STARTTLS and email.smtp.requireTLS is true"),
            // A wrong password.
            (.startTLS, "requireTLS: true, caFile: \"\(TestTLS.shared.caFile)\", username: herald, password: wrong", "SMTP 535"),
        ])
    func refusedBeforeData(security: SMTPSink.Security, smtpSettings: String, reason: String) async throws {
        let sink = try await SMTPSink.start(security: security, login: security == .plain ? nil : "herald:right")
        defer { sink.stop() }
        try await StackHarness.run(configure: {
            $0.smtpURL = sink.url
            $0.smtpExtra = smtpSettings
        }) { stack in
            try await stack.startAPI()
            try await stack.startEmailWorker()
            try await Self.sendLink(stack, to: "refused@example.com")
            let dead = try await Self.deadLetter(stack)
            guard case .string(let recorded) = dead.headers["x-herald-reason"] else {
                Issue.record("no reason")
                return
            }
            #expect(recorded.hasPrefix(reason))
            #expect(sink.attempts == 0)
        }
    }

    @Test("same rules as SMS: a job published twice is mailed once; a job past its link's life is dropped", arguments: TestStore.allCases)
    func idempotencyAndExpiry(_ store: TestStore) async throws {
        let sink = try await SMTPSink.start()
        defer { sink.stop() }
        try await StackHarness.run(store: store, configure: { $0.smtpURL = sink.url }) { stack in
            try await stack.startEmailWorker()
            let publisher = try await TestBroker.connection(.publisher, logger: quietLogger())
            let sealer = Sealer(key: stack.keys.sealing)
            func job(_ id: UUID, expiresIn seconds: TimeInterval) -> Job {
                Job(
                    id: id, project: TestConfiguration.projectID, createdAt: Date().addingTimeInterval(-10),
                    expiresAt: Date().addingTimeInterval(seconds),
                    payload: .email(
                        EmailMessage(
                            to: "twice@example.com", template: .signInLink,
                            params: [
                                "linkSealed": sealer.seal(
                                    "https://auth.example.com/__/auth/action?mode=signIn&oobCode=x", jobID: id, destination: "twice@example.com")
                            ])))
            }
            let store = try await stack.store
            let once = UUID()
            let late = UUID()
            for id in [once, late] {
                try await store.recordPending(
                    jobID: id, projectID: TestConfiguration.projectID, type: .email, destination: "twice@example.com", now: Date())
            }
            let jobs = AMQPJobPublisher(connection: publisher, topology: stack.topology, keys: stack.keys)
            try await jobs.publish(job(once, expiresIn: 3600), traceparent: .random())
            _ = try await Self.waitForMail(sink, stack)
            // The copy must find the job handled: the outcome is recorded just after the mail is accepted.
            // (A copy arriving before that finds it in doubt; `MessageLedgerTests` covers that race.)
            #expect(await eventually { (try? await store.deliveryStatus(jobID: once))??.status == .sent })
            try await jobs.publish(job(once, expiresIn: 3600), traceparent: .random())
            try await jobs.publish(job(late, expiresIn: -1), traceparent: .random())
            #expect(await eventually { (try? await store.deliveryStatus(jobID: late))??.status == .expired })
            #expect(await eventually { stack.allOutput.contains("job already handled; skipped") })
            try await Task.sleep(for: .seconds(1))
            #expect(sink.accepted.count == 1)
            #expect(try await store.deliveryStatus(jobID: once)?.status == .sent)
            await publisher.shutdown()
        }
    }

    @Test("mail to an Apple private-relay address goes out from the relay-registered sender")
    func privateRelaySender() async throws {
        let sink = try await SMTPSink.start()
        defer { sink.stop() }
        try await StackHarness.run(configure: {
            $0.smtpURL = sink.url
            $0.privateRelayFrom = "Herald Relay <relay@mail.herald.test>"
        }) { stack in
            try await stack.startAPI()
            try await stack.startEmailWorker()
            try await Self.sendLink(stack, to: "x7f3k2@privaterelay.appleid.com")
            try await Self.sendLink(stack, to: "carol@example.com")
            let mails = try await Self.waitForMail(sink, count: 2, stack)
            let relay = try #require(mails.first { $0.recipients == ["x7f3k2@privaterelay.appleid.com"] })
            let plain = try #require(mails.first { $0.recipients == ["carol@example.com"] })
            #expect(relay.mailFrom == "relay@mail.herald.test")
            #expect(relay.header("From") == "Herald Relay <relay@mail.herald.test>")
            #expect(relay.header("Message-ID")?.hasSuffix("@mail.herald.test>") == true)
            #expect(plain.mailFrom == "no-reply@herald.test")
        }
    }

    @Test(
        "firebase-admin (Python) with FIREBASE_AUTH_EMULATOR_HOST: create, get by uid/email/phone, list, email link that signs in, custom claims in verified tokens, delete",
        arguments: TestStore.allCases)
    func firebaseAdmin(_ store: TestStore) async throws {
        // firebase-admin's emulator mode always sends `Bearer owner`, which only devMode accepts.
        try await StackHarness.run(
            store: store,
            configure: {
                $0.devMode = true
                $0.adminTokens = ["owner"]
            }
        ) { stack in
            try await stack.startAPI()
            func admin(_ arguments: [String]) async throws -> [String: Any] {
                let script = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/firebase_admin_flow.py").path
                let process = try await PythonProcess.run(
                    [script, TestConfiguration.projectID] + arguments,
                    environment: ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:\(stack.settings.apiPort)"])
                let object = try JSONSerialization.jsonObject(with: Data(process.output.utf8)) as? [String: Any]
                guard process.status == 0, let object else { throw TestFailure("firebase-admin \(arguments): \(process.output)") }
                return object
            }
            let created = try await admin(["create", "Dora@Example.com", "+15555550142"])
            let uid = try #require(created["uid"] as? String)
            let got = try await admin(["get", uid, "dora@example.com", "+15555550142"])
            for key in ["byUid", "byEmail", "byPhone"] {
                let record = try #require(got[key] as? [String: Any])
                #expect(record["uid"] as? String == uid)
                #expect(record["email"] as? String == "dora@example.com")
                #expect(record["phone"] as? String == "+15555550142")
                #expect(record["displayName"] as? String == "Admin Made")
                #expect(record["emailVerified"] as? Bool == false)
            }
            #expect(try await admin(["list"])["uids"] as? [String] == [uid])

            let link = try #require(try await admin(["link", "dora@example.com", "https://app.example.com/done"])["link"] as? String)
            #expect(queryItems(link)["mode"] == "signIn")
            let signedIn = try await stack.client.post(
                Self.v1 + "signInWithEmailLink", apiKey: TestConfiguration.apiKey,
                json: ["email": "dora@example.com", "oobCode": try #require(queryItems(link)["oobCode"])])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("localId") == uid)
            // The admin never verified the address: the link proves it, and the account's other way in (the
            // phone number) is unlinked, as Firebase does.
            let after = try await admin(["get", uid, "dora@example.com", "+15555550142"])
            let byUid = try #require(after["byUid"] as? [String: Any])
            #expect(byUid["emailVerified"] as? Bool == true)
            #expect(byUid["phone"] is NSNull)
            #expect(after["byPhone"] is NSNull)

            // Custom claims: stored, shown on the record, and in every ID token issued after (a refresh too).
            let claims = try await admin(["claims", uid, #"{"role":"editor","level":3,"beta":true,"teams":["a","b"]}"#])
            let stored = try #require(claims["customClaims"] as? [String: Any])
            #expect(stored["role"] as? String == "editor" && stored["level"] as? Int == 3 && stored["beta"] as? Bool == true)
            let refreshed = try await stack.client.post(
                "/securetoken.googleapis.com/v1/token", apiKey: TestConfiguration.apiKey,
                json: ["grantType": "refresh_token", "refreshToken": try #require(signedIn.string("refreshToken"))])
            let verified = try await admin(["verify", try #require(refreshed.string("id_token"), "\(refreshed.errorMessage ?? "")")])
            #expect(verified["role"] as? String == "editor" && verified["level"] as? Int == 3 && verified["beta"] as? Bool == true)
            #expect(verified["teams"] as? [String] == ["a", "b"])
            #expect(verified["uid"] as? String == uid)
            let cleared = try await admin(["claims", uid, "{}"])
            #expect((cleared["customClaims"] as? [String: Any])?.isEmpty ?? true)

            let deleted = try await admin(["delete", uid])
            #expect(deleted["notFoundAfter"] as? Bool == true)
            #expect(try await admin(["list"])["uids"] as? [String] == [])
        }
    }
}

extension EmailEndToEndTests {
    @Test(
        "herald-admin users import reads a `firebase auth:export` file with Firebase's scrypt parameters; the users sign in",
        arguments: TestStore.allCases)
    func adminUsersImport(_ store: TestStore) async throws {
        try await StackHarness.run(store: store) { stack in
            let export: [String: Any] = [
                "users": [
                    [
                        "localId": "exported-1", "email": "user1@example.com", "emailVerified": true, "displayName": "Exported",
                        "passwordHash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
                        "salt": "42xEC+ixf3L2lw==", "createdAt": "1486324817000", "lastSignedInAt": "1486324819000",
                        "providerUserInfo": [["providerId": "password", "rawId": "user1@example.com", "email": "user1@example.com"]],
                    ],
                    ["localId": "exported-2", "email": "not-an-address"],
                ]
            ]
            let file = stack.settings.stateDir + "/export.json"
            try JSONSerialization.data(withJSONObject: export).write(to: URL(fileURLWithPath: file))
            let (status, output) = try await stack.adminExit([
                "users", "import", file, "--project", TestConfiguration.projectID, "--hash-algo", "SCRYPT", "--hash-key",
                "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==", "--salt-separator", "Bw==",
                "--rounds", "8", "--mem-cost", "14",
            ])
            #expect(status == 1, "one user was refused: \(output)")
            #expect(output.contains("user 1 (exported-2): email is invalid"))
            #expect(output.contains("imported 1 of 2 users into \(TestConfiguration.projectID)"))
            #expect(output.contains("lSrfV15cpx95") == false)
            try await stack.startAPI()
            let signedIn = try await stack.client.post(
                Self.v1 + "signInWithPassword", apiKey: TestConfiguration.apiKey, json: ["email": "user1@example.com", "password": "user1password"])
            #expect(signedIn.status == 200, "\(signedIn.errorMessage ?? "")")
            #expect(signedIn.string("localId") == "exported-1" && signedIn.string("displayName") == "Exported")
        }
    }

    @Test("an email change through herald-email-worker: the new address gets its link, opening it mails the old one a way back")
    func emailChangeMails() async throws {
        let sink = try await SMTPSink.start()
        defer { sink.stop() }
        try await StackHarness.run(store: .sqlite, configure: { $0.smtpURL = sink.url }) { stack in
            try await stack.startAPI()
            try await stack.startEmailWorker()
            let created = try await stack.client.post(
                Self.v1 + "signUp", apiKey: TestConfiguration.apiKey, json: ["email": "before@example.com", "password": "change-me-1"])
            let token = try #require(created.string("idToken"), "\(created.errorMessage ?? "")")
            let asked = try await stack.client.post(
                Self.v1 + "sendOobCode", apiKey: TestConfiguration.apiKey,
                json: ["requestType": "VERIFY_AND_CHANGE_EMAIL", "idToken": token, "newEmail": "after@example.com"])
            #expect(asked.status == 200, "\(asked.errorMessage ?? "")")
            let change = try #require(try await Self.waitForMail(sink, stack).first)
            #expect(change.recipients == ["after@example.com"])
            #expect(change.header("Subject") == "Confirm your new email address for Herald Test")
            #expect(try #require(change.part("text/plain")).body.contains("before@example.com"))
            let changeLink = try #require(change.link)
            #expect(queryItems(changeLink)["mode"] == "verifyAndChangeEmail")

            let applied = try await stack.client.post(
                Self.v1 + "update", apiKey: TestConfiguration.apiKey, json: ["oobCode": try #require(queryItems(changeLink)["oobCode"])])
            #expect(applied.string("email") == "after@example.com", "\(applied.errorMessage ?? "")")
            let notice = try #require(try await Self.waitForMail(sink, count: 2, stack).last)
            #expect(notice.recipients == ["before@example.com"])
            #expect(notice.header("Subject") == "Your email address for Herald Test was changed")
            #expect(try #require(notice.part("text/plain")).body.contains("after@example.com"))
            #expect(queryItems(try #require(notice.link))["mode"] == "recoverEmail")
        }
    }

    @Test(
        "firebase-admin (Python): create_user and update_user with a password, reset and verification links, import_users with scrypt, pbkdf2_sha256, hmac_sha256 and bcrypt",
        arguments: TestStore.allCases)
    func firebaseAdminPasswords(_ store: TestStore) async throws {
        try await StackHarness.run(
            store: store,
            configure: {
                $0.devMode = true
                $0.adminTokens = ["owner"]
            }
        ) { stack in
            try await stack.startAPI()
            func admin(_ arguments: [String]) async throws -> [String: Any] {
                let script = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/firebase_admin_flow.py").path
                let process = try await PythonProcess.run(
                    [script, TestConfiguration.projectID] + arguments,
                    environment: ["FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:\(stack.settings.apiPort)"])
                let object = try JSONSerialization.jsonObject(with: Data(process.output.utf8)) as? [String: Any]
                guard process.status == 0, let object else { throw TestFailure("firebase-admin \(arguments): \(process.output)") }
                return object
            }
            func signIn(_ email: String, _ password: String) async throws -> HeraldClient.Answer {
                try await stack.client.post(
                    Self.v1 + "signInWithPassword", apiKey: TestConfiguration.apiKey, json: ["email": email, "password": password])
            }
            let uid = try #require(try await admin(["password", "pw@example.com", "first-secret"])["uid"] as? String)
            #expect(try await signIn("pw@example.com", "first-secret").string("localId") == uid)
            _ = try await admin(["set_password", uid, "second-secret"])
            #expect(try await signIn("pw@example.com", "first-secret").status == 400)
            #expect(try await signIn("pw@example.com", "second-secret").status == 200)

            let reset = try #require(try await admin(["reset_link", "pw@example.com"])["link"] as? String)
            #expect(queryItems(reset)["mode"] == "resetPassword")
            let done = try await stack.client.post(
                Self.v1 + "resetPassword", apiKey: TestConfiguration.apiKey,
                json: ["oobCode": try #require(queryItems(reset)["oobCode"]), "newPassword": "third-secret"])
            #expect(done.status == 200, "\(done.errorMessage ?? "")")
            #expect(try await signIn("pw@example.com", "third-secret").status == 200)
            let verify = try #require(try await admin(["verify_link", "pw@example.com"])["link"] as? String)
            #expect(queryItems(verify)["mode"] == "verifyEmail")

            let imported = try await admin(["import", "imp"])
            for hash in ["scrypt", "pbkdf2", "hmac", "bcrypt"] {
                let result = try #require(imported[hash] as? [String: Any], "\(hash)")
                #expect(result["success"] as? Int == 1 && result["failure"] as? Int == 0, "\(hash): \(result)")
            }
            let bad = try #require(imported["bad"] as? [String: Any])
            #expect(bad["success"] as? Int == 2 && bad["failure"] as? Int == 1)
            #expect(((bad["errors"] as? [[Any]])?.first?.first as? Int) == 1, "firebase-admin reads the refused record's index")
            for (email, password) in try #require(imported["passwords"] as? [String: String]) {
                let answer = try await signIn(email, password)
                #expect(answer.status == 200, "\(email): \(answer.errorMessage ?? "")")
            }
            let scryptUser = try await admin(["get", "imp-scrypt", "imp-scrypt@example.com", "+15555550177"])
            let record = try #require(scryptUser["byUid"] as? [String: Any])
            #expect(record["emailVerified"] as? Bool == true && record["displayName"] as? String == "Scrypt User")
            #expect(record["phone"] as? String == "+15555550177")
            #expect((record["providers"] as? [String])?.contains("apple.com") == true)
        }
    }
}

/// Query parameters of a URL.
func queryItems(_ url: String) -> [String: String] {
    Dictionary((URLComponents(string: url)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
}

/// Runs the test venv's Python to completion and returns its output.
enum PythonProcess {
    /// The wait for the script (seconds for firebase-admin) happens on a thread of its own: blocking in
    /// `readDataToEndOfFile` on the cooperative pool (two threads here, and both store variants run this
    /// at once) stalled every in-process server and timer of the other tests for as long.
    static func run(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: SMTPSink.python)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try launch(process)
        let reader = output.fileHandleForReading
        let data = await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
            Thread { continuation.resume(returning: reader.readDataToEndOfFile()) }.start()
        }
        // The output is closed: the process is exiting; poll for the exit (no waitUntilExit).
        _ = await eventually(timeout: .seconds(5)) { process.isRunning == false }
        return (process.isRunning ? -1 : process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
