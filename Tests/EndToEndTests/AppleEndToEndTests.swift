import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Sign in with Apple end to end through the real executables: herald-api verifies Apple's token and
/// queues revocations, herald-apple-worker exchanges the code at the fake Apple (over TLS, checking the
/// ES256 client secret) and revokes the refresh token, the ledger records each outcome.
@Suite("Sign in with Apple and token revocation end to end (herald-api, herald-apple-worker, fake Apple over TLS)")
struct AppleEndToEndTests {
    static let bundleID = "com.example.herald"
    static let servicesID = "com.example.herald.web"
    static let v1 = "/identitytoolkit.googleapis.com/v1/accounts:"

    /// A stack whose project trusts `fake`, with the fake's .p8 key in the state directory.
    static func run(
        store: TestStore, limits: String? = nil, _ body: @escaping (StackHarness, FakeApple) async throws -> Void
    ) async throws {
        let fake = try await FakeApple.start(clientIDs: [bundleID, servicesID])
        let keyFile = NSTemporaryDirectory() + "herald-siwa-\(UUID().uuidString.prefix(8)).p8"
        try fake.clientSecretKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        do {
            try await StackHarness.run(
                store: store,
                configure: { settings in
                    settings.apple = TestConfiguration.appleSection(fake, clientIds: [bundleID, servicesID], keyFile: keyFile)
                    if let limits { settings.limits = limits }
                }
            ) { stack in try await body(stack, fake) }
        } catch {
            await fake.stop()
            throw error
        }
        await fake.stop()
    }

    /// Signs in with a fresh Apple token for `subject`; returns the answer.
    static func signIn(_ stack: StackHarness, _ fake: FakeApple, subject: String, email: String? = nil) async throws -> HeraldClient.Answer {
        let nonce = UUID().uuidString
        let token = fake.identityToken(subject: subject, audience: bundleID, rawNonce: nonce, email: email, isPrivateEmail: email.map { _ in "true" })
        let answer = try await stack.client.post(
            v1 + "signInWithIdp", apiKey: TestConfiguration.apiKey,
            json: [
                "requestUri": "http://localhost", "postBody": "providerId=apple.com&id_token=\(token)&nonce=\(nonce)", "returnSecureToken": true,
                "returnIdpCredential": true, "autoCreate": true,
            ])
        guard answer.status == 200 else { throw TestFailure("signInWithIdp: \(answer.status) \(answer.errorMessage ?? "")") }
        return answer
    }

    /// `revokeToken` as the iOS SDK sends it (tokenType as the enum number).
    static func revoke(_ stack: StackHarness, code: String, idToken: String, path: String = "/v2/accounts:revokeToken") async throws
        -> HeraldClient.Answer
    {
        try await stack.client.post(
            path, apiKey: TestConfiguration.apiKey, json: ["providerId": "apple.com", "tokenType": 3, "token": code, "idToken": idToken],
            headers: [("X-Ios-Bundle-Identifier", bundleID)])
    }

    /// The user's apple messages from the admin API, newest first.
    static func messages(_ stack: StackHarness, user: String) async throws -> [[String: Any]] {
        let answer = try await stack.client.get("/admin/v1/messages?type=apple&to=\(user)", headers: TestConfiguration.adminHeader)
        return answer.json["messages"] as? [[String: Any]] ?? []
    }

    @Test(
        "revokeToken: a 503 is retried through the delay queue, the code is exchanged once and the refresh token revoked; the same code again queues nothing; an unknown code ends invalid_grant; the account is deleted after",
        arguments: [TestStore.sqlite, .postgres])
    func revocation(_ store: TestStore) async throws {
        try await Self.run(store: store) { stack, fake in
            try await stack.startAPI()
            try await stack.startAppleWorker()
            let signedIn = try await Self.signIn(stack, fake, subject: "001.revoke")
            let idToken = try #require(signedIn.string("idToken"))
            let user = try #require(signedIn.string("localId"))

            // Apple's token endpoint fails once: the job goes through the delay queue and succeeds.
            fake.failTokenRequests([503])
            let code = fake.issueCode(clientID: Self.bundleID)
            let answer = try await Self.revoke(stack, code: code, idToken: idToken, path: "/identitytoolkit.googleapis.com/v2/accounts:revokeToken")
            #expect(answer.status == 200, "\(answer.errorMessage ?? "")")
            #expect(answer.json.isEmpty)
            #expect(await eventually(timeout: .seconds(30)) { fake.revokedTokens.count == 1 }, "\(stack.allOutput.suffix(3000))")
            #expect(fake.issuedRefreshTokens.contains(fake.revokedTokens.first ?? "-"))
            let exchanges = fake.requests.filter { $0.path == "/auth/token" }
            #expect(exchanges.map(\.status) == [503, 200])
            #expect(exchanges.last?.form["client_id"] == Self.bundleID && exchanges.last?.form["code"] == code)
            #expect(fake.requests.allSatisfy { $0.problem == nil || $0.problem == "scripted" }, "the client secret passed Apple's checks")
            #expect(fake.requests.last?.form["token_type_hint"] == "refresh_token")
            #expect(
                await eventually { (try? await Self.messages(stack, user: user))?.first?["status"] as? String == "sent" })
            let sent = try #require(try await Self.messages(stack, user: user).first)
            #expect(sent["attempts"] as? Int == 2 && sent["template"] as? String == "revoke" && sent["provider"] as? String == "apple")

            // The same code again is the same revocation: answered, and nothing more is queued or sent.
            let replay = try await Self.revoke(stack, code: code, idToken: idToken)
            #expect(replay.status == 200)
            try await Task.sleep(for: .seconds(1))
            #expect(try await Self.messages(stack, user: user).count == 1)
            #expect(fake.requests.filter { $0.path == "/auth/token" }.count == 2)

            // A code Apple does not know: invalid_grant, which is final and recorded.
            let stale = "c.never-issued." + UUID().uuidString
            #expect(try await Self.revoke(stack, code: stale, idToken: idToken).status == 200)
            #expect(
                await eventually { (try? await Self.messages(stack, user: user))?.first?["status"] as? String == "failed" })
            let failed = try #require(try await Self.messages(stack, user: user).first)
            #expect((failed["lastError"] as? String)?.contains("invalid_grant") == true)
            #expect(fake.revokedTokens.count == 1)

            // Deleting the account afterwards works as before.
            let deleted = try await stack.client.post(Self.v1 + "delete", apiKey: TestConfiguration.apiKey, json: ["idToken": idToken])
            #expect(deleted.status == 200, "\(deleted.errorMessage ?? "")")
            // Nothing secret in any log: codes and refresh tokens stay out.
            #expect(stack.allOutput.contains(code) == false)
            #expect(fake.issuedRefreshTokens.allSatisfy { stack.allOutput.contains($0) == false })
        }
    }

    @Test("an exchanged code is never exchanged again: when Apple's revoke fails, the retry revokes the refresh token it carries")
    func revokeFailureAfterExchange() async throws {
        try await Self.run(store: .sqlite) { stack, fake in
            try await stack.startAPI()
            try await stack.startAppleWorker()
            let signedIn = try await Self.signIn(stack, fake, subject: "001.continue")
            fake.failRevokeRequests([503, 502])
            let code = fake.issueCode(clientID: Self.bundleID)
            let answer = try await Self.revoke(stack, code: code, idToken: try #require(signedIn.string("idToken")))
            #expect(answer.status == 200, "\(answer.errorMessage ?? "")")
            #expect(await eventually(timeout: .seconds(30)) { fake.revokedTokens.count == 1 }, "\(stack.allOutput.suffix(3000))")
            #expect(fake.requests.filter { $0.path == "/auth/token" }.count == 1, "one exchange")
            #expect(fake.requests.filter { $0.path == "/auth/revoke" }.map(\.status) == [503, 502, 200])
            #expect(fake.issuedRefreshTokens == Set(fake.revokedTokens))
            let user = try #require(signedIn.string("localId"))
            #expect(await eventually { (try? await Self.messages(stack, user: user))?.first?["status"] as? String == "sent" })
        }
    }

    @Test("revokeToken's refusals: wrong provider, token type, missing token, no idToken, unknown clientId; one job per code; per-user limit")
    func refusals() async throws {
        try await Self.run(store: .sqlite) { stack, fake in
            try await stack.startAPI()
            let signedIn = try await Self.signIn(stack, fake, subject: "001.refuse")
            let idToken = try #require(signedIn.string("idToken"))
            let cases: [([String: any Sendable], String)] = [
                (["providerId": "google.com", "tokenType": 3, "token": "c", "idToken": idToken], "INVALID_PROVIDER_ID"),
                (["providerId": "apple.com", "tokenType": 2, "token": "c", "idToken": idToken], "INVALID_ARGUMENT"),
                (["providerId": "apple.com", "tokenType": "CODE", "idToken": idToken], "INVALID_ARGUMENT"),
                (["providerId": "apple.com", "tokenType": "CODE", "token": "c"], "MISSING_ID_TOKEN"),
                (["providerId": "apple.com", "tokenType": "CODE", "token": "c", "idToken": idToken, "clientId": "com.evil"], "INVALID_ARGUMENT"),
            ]
            for (body, expected) in cases {
                let answer = try await stack.client.post("/v2/accounts:revokeToken", apiKey: TestConfiguration.apiKey, json: body)
                #expect(answer.status == 400)
                #expect(answer.errorMessage?.hasPrefix(expected) == true, "\(body): \(answer.errorMessage ?? "")")
            }

            // With no worker running, the queued job can be read: the published contract, the code sealed.
            let code = fake.issueCode(clientID: Self.servicesID)
            let queued = try await stack.client.post(
                "/v2/accounts:revokeToken", apiKey: TestConfiguration.apiKey,
                json: [
                    "providerId": "apple.com", "tokenType": "CODE", "token": code, "idToken": idToken, "clientId": Self.servicesID,
                    "redirectUri": "https://app.example.com/apple",
                ])
            #expect(queued.status == 200, "\(queued.errorMessage ?? "")")
            let jobs = try await TestBroker.drain(stack.topology.workQueue(.apple), using: stack.admin)
            try #require(jobs.count == 1)
            let body = String(decoding: jobs[0].body, as: UTF8.self)
            #expect(body.contains(code) == false, "the code travels sealed")
            let job = try JobCodec.decode(jobs[0].body)
            guard case .apple(let message) = job.payload else { throw TestFailure("not an apple job") }
            #expect(message.clientId == Self.servicesID && message.redirectUri == "https://app.example.com/apple")
            #expect(message.user == signedIn.string("localId"))
            let opened = try Sealer(key: stack.keys.sealing).open(
                message.params["authorizationCodeSealed"] ?? "", jobID: job.id, destination: message.user)
            #expect(opened == code)
            #expect(job.expiresAt.timeIntervalSince(job.createdAt) == 300, "a code lives five minutes")
            var headers: [String: Any] = [:]
            for (name, value) in jobs[0].headers {
                switch value {
                case .string(let text): headers[name] = text
                case .int(let number): headers[name] = number
                default: break
                }
            }
            let line = String(
                decoding: try JSONSerialization.data(withJSONObject: ["type": "apple", "headers": headers, "body": body]), as: UTF8.self)
            let file = stack.settings.stateDir + "/apple.jsonl"
            try line.write(toFile: file, atomically: true, encoding: .utf8)
            let validator = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/validate_jobs.py").path
            let asyncapi = TestConfiguration.repositoryRoot.appendingPathComponent("deploy/asyncapi.yaml").path
            let report = try await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(validator)) \(shellQuoted(asyncapi)) \(shellQuoted(file))")
            #expect(report.contains("validated 1 messages, 0 problems"), "\(report)")

            // The same code while its job waits: one job, however often the app asks.
            let again = fake.issueCode(clientID: Self.bundleID)
            for _ in 0..<4 { #expect(try await Self.revoke(stack, code: again, idToken: idToken).status == 200) }
            #expect(try await TestBroker.drain(stack.topology.workQueue(.apple), using: stack.admin).count == 1)

            // limits.revocationsPerUser (5/1h): five requests so far (repeats count), so the sixth is refused.
            let limited = try await Self.revoke(stack, code: fake.issueCode(clientID: Self.bundleID), idToken: idToken)
            #expect(limited.status == 400)
            #expect(limited.errorMessage?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "\(limited.errorMessage ?? "")")
            #expect(limited.header("Retry-After") != nil)
            #expect(try await TestBroker.drain(stack.topology.workQueue(.apple), using: stack.admin).isEmpty)
        }
    }

    @Test("limits.revocationsPerIP counts every user's revocations from one client address")
    func perAddress() async throws {
        try await Self.run(store: .sqlite, limits: #"{perNumber: ["100/1m"], revocationsPerIP: ["2/1h"], pumping: {enabled: false}}"#) {
            stack, fake in
            try await stack.startAPI()
            var answers: [HeraldClient.Answer] = []
            for subject in ["001.ip-a", "001.ip-b", "001.ip-c"] {
                let idToken = try #require(try await Self.signIn(stack, fake, subject: subject).string("idToken"))
                answers.append(try await Self.revoke(stack, code: fake.issueCode(clientID: Self.bundleID), idToken: idToken))
            }
            #expect(answers.map(\.status) == [200, 200, 400])
            #expect(answers[2].errorMessage?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "\(answers[2].errorMessage ?? "")")
            #expect(try await TestBroker.drain(stack.topology.workQueue(.apple), using: stack.admin).count == 2)
            let metrics = String(decoding: try await HeraldClient(port: stack.settings.apiMetricsPort).get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"limit="limits.revocationsPerIP""#))
        }
    }

    @Test("revokeToken is refused for the account of a test phone number, whose fixed code others may know")
    func testNumberAccount() async throws {
        try await Self.run(store: .sqlite) { stack, fake in
            try await stack.startAPI()
            let sent = try await stack.client.post(
                Self.v1 + "sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": "+16505553434"])
            let session = try #require(sent.string("sessionInfo"), "\(sent.errorMessage ?? "")")
            let signedIn = try await stack.client.post(
                Self.v1 + "signInWithPhoneNumber", apiKey: TestConfiguration.apiKey, json: ["sessionInfo": session, "code": "654321"])
            let idToken = try #require(signedIn.string("idToken"), "\(signedIn.errorMessage ?? "")")
            let answer = try await Self.revoke(stack, code: fake.issueCode(clientID: Self.bundleID), idToken: idToken)
            #expect(answer.status == 400)
            #expect(answer.errorMessage?.hasPrefix("OPERATION_NOT_ALLOWED") == true, "\(answer.errorMessage ?? "")")
            #expect(try await TestBroker.drain(stack.topology.workQueue(.apple), using: stack.admin).isEmpty)
        }
    }

    @Test("a private-relay user from Sign in with Apple gets sign-in links from email.privateRelayFrom")
    func privateRelay() async throws {
        let sink = try await SMTPSink.start()
        defer { sink.stop() }
        let fake = try await FakeApple.start(clientIDs: [Self.bundleID])
        defer { Task { await fake.stop() } }
        try await StackHarness.run(configure: { settings in
            settings.apple = TestConfiguration.appleSection(fake, clientIds: [Self.bundleID])
            settings.smtpURL = sink.url
            settings.privateRelayFrom = "Herald Relay <relay@herald.test>"
        }) { stack in
            try await stack.startAPI()
            try await stack.startEmailWorker()
            let relay = "x7k2m9@privaterelay.appleid.com"
            let signedIn = try await Self.signIn(stack, fake, subject: "001.relay", email: relay)
            #expect(signedIn.string("email") == relay)
            let sent = try await stack.client.post(
                Self.v1 + "sendOobCode", apiKey: TestConfiguration.apiKey,
                json: ["requestType": "EMAIL_SIGNIN", "email": relay, "continueUrl": "https://app.example.com/finish"])
            #expect(sent.status == 200, "\(sent.errorMessage ?? "")")
            #expect(await eventually(timeout: .seconds(30)) { sink.accepted.count == 1 }, "\(stack.allOutput.suffix(2000))")
            let message = try #require(sink.accepted.first)
            #expect(message.mailFrom == "relay@herald.test")
            #expect(message.recipients == [relay])
            // The address came from the Apple identity token: the account lists it under apple.com.
            let lookup = try await stack.client.post(
                Self.v1 + "lookup", apiKey: TestConfiguration.apiKey, json: ["idToken": try #require(signedIn.string("idToken"))])
            let providers = ((lookup.json["users"] as? [[String: Any]])?.first?["providerUserInfo"] as? [[String: Any]]) ?? []
            #expect(providers.contains { $0["providerId"] as? String == "apple.com" && $0["email"] as? String == relay })
        }
    }
}
