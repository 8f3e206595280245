import Foundation
import HeraldAPI
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@Suite("Identity Toolkit error strings and envelope")
struct WireErrorTests {
    let key = TestConfiguration.apiKey

    @Test("every refusal of the phone flow, byte for byte")
    func errorStrings() async throws {
        let harness = try RouterHarness()
        try await harness.run { client in
            let send = Paths.v1 + "sendVerificationCode"
            let signIn = Paths.v1 + "signInWithPhoneNumber"

            let missingKey = try await client.post(send, json: ["phoneNumber": "+15555550100"])
            #expect(missingKey.status == 403)
            #expect(missingKey.errorMessage == "The request is missing a valid API key.")
            #expect((missingKey.json["error"] as? [String: Any])?["status"] as? String == "PERMISSION_DENIED")

            let badKey = try await client.post(send, apiKey: "nope", json: ["phoneNumber": "+15555550100"])
            #expect(badKey.status == 400)
            #expect(badKey.errorMessage == "API key not valid. Please pass a valid API key.")
            let badKeyError = try #require(badKey.json["error"] as? [String: Any])
            #expect(badKeyError["status"] as? String == "INVALID_ARGUMENT")
            #expect(((badKeyError["errors"] as? [[String: Any]])?.first?["reason"] as? String) == "keyInvalid")

            let cases: [([String: any Sendable], String)] = [
                ([:], "INVALID_PHONE_NUMBER : Invalid format."),
                (["phoneNumber": "15555550100"], "INVALID_PHONE_NUMBER : Invalid format."),
                (["phoneNumber": "+1555555abcd"], "INVALID_PHONE_NUMBER : Invalid format."),
                (["phoneNumber": "+999555550100"], "INVALID_PHONE_NUMBER : Invalid format."),
                (["phoneNumber": "+1555555010"], "INVALID_PHONE_NUMBER : TOO_SHORT"),
                (["phoneNumber": "+155555501001"], "INVALID_PHONE_NUMBER : TOO_LONG"),
                (["phoneNumber": "+15555550100", "tenantId": "t1"], "UNSUPPORTED_TENANT_OPERATION"),
            ]
            for (body, message) in cases {
                let answer = try await client.post(send, apiKey: key, json: body)
                #expect(answer.status == 400, "\(body)")
                #expect(answer.errorMessage == message, "\(body)")
            }

            let disabled = try await client.post(send, apiKey: TestConfiguration.disabledAPIKey, json: ["phoneNumber": "+15555550100"])
            #expect(disabled.errorMessage == "OPERATION_NOT_ALLOWED")

            let signInCases: [([String: any Sendable], String)] = [
                (["code": "123456"], "MISSING_SESSION_INFO"),
                (["sessionInfo": "abc"], "MISSING_CODE"),
                (["sessionInfo": "", "code": "123456"], "MISSING_SESSION_INFO"),
                (["sessionInfo": "not-a-session", "code": "123456"], "INVALID_SESSION_INFO"),
                (["temporaryProof": "p"], "MISSING_PHONE_NUMBER"),
            ]
            for (body, message) in signInCases {
                let answer = try await client.post(signIn, apiKey: key, json: body)
                #expect(answer.errorMessage == message, "\(body)")
            }

            // Envelope shape: code, message, errors[0] {message, reason, domain}; no status on plain 400s.
            let invalid = try await client.post(signIn, apiKey: key, json: ["sessionInfo": "x", "code": "1"])
            let envelope = try #require(invalid.json["error"] as? [String: Any])
            #expect(envelope["code"] as? Int == 400)
            #expect(envelope["status"] == nil)
            let item = try #require((envelope["errors"] as? [[String: Any]])?.first)
            #expect(item["message"] as? String == "INVALID_SESSION_INFO")
            #expect(item["reason"] as? String == "invalid")
            #expect(item["domain"] as? String == "global")

            let badJSON = try await client.send("POST", send, apiKey: key, body: Data("{nope".utf8), contentType: "application/json")
            #expect(badJSON.status == 400)
            #expect(badJSON.errorMessage == "Invalid JSON payload received.")

            let unknown = try await client.post(Paths.v1 + "doesNotExist", apiKey: key, json: [:])
            #expect(unknown.status == 404)
            #expect(try await client.post("/www.googleapis.com/identitytoolkit/v3/relyingparty/nothing", apiKey: key, json: [:]).status == 404)
            // Operations Identity Toolkit has and Herald does not serve: 501 naming them, on every path family.
            for (path, name) in [
                (Paths.v1 + "signInWithCustomToken", "accounts:signInWithCustomToken"),
                (Paths.legacy + "verifyCustomToken", "accounts:signInWithCustomToken"), ("/v2/accounts/passkeySignIn:start", "passkeySignIn:start"),
            ] {
                let answer = try await client.post(path, apiKey: key, json: [:])
                #expect(answer.status == 501, "\(path)")
                #expect(answer.errorMessage == "NOT_IMPLEMENTED : \(name) is not implemented in Herald.", "\(path)")
            }
            // The password operations answer their own refusals.
            for (path, message) in [
                (Paths.v1 + "signUp", "MISSING_EMAIL"), (Paths.legacy + "signupNewUser", "MISSING_EMAIL"),
                (Paths.shortV1 + "signInWithPassword", "MISSING_EMAIL"), (Paths.legacy + "verifyPassword", "MISSING_EMAIL"),
                (Paths.v1 + "resetPassword", "MISSING_OOB_CODE"),
            ] {
                let answer = try await client.post(path, apiKey: key, json: ["email": ""])
                #expect(answer.status == 400, "\(path)")
                #expect(answer.errorMessage == message, "\(path)")
            }

            let idp = try await client.post(Paths.v1 + "signInWithIdp", apiKey: key, json: [:])
            #expect(idp.status == 400)
            #expect(idp.errorMessage == "MISSING_REQUEST_URI")

            let tokenCases: [([String: any Sendable], String)] = [
                ([:], "MISSING_GRANT_TYPE"),
                (["grant_type": "password"], "INVALID_GRANT_TYPE"),
                (["grant_type": "refresh_token"], "MISSING_REFRESH_TOKEN"),
                (["grant_type": "refresh_token", "refresh_token": "hrt_unknown"], "INVALID_REFRESH_TOKEN"),
            ]
            for (body, message) in tokenCases {
                #expect(try await client.post(Paths.token, apiKey: key, json: body).errorMessage == message)
            }
        }
    }

    @Test("with the broker unreachable, sendVerificationCode answers 503 UNAVAILABLE with Retry-After and stays up")
    func brokerUnreachable() async throws {
        let harness = try APIHarness { $0.amqpURL = "amqp://guest:guest@127.0.0.1:\(freePort())/%2f" }
        var dependencies = try await HeraldAPI.APIDependencies.live(
            configuration: harness.configuration, sealingKey: harness.configuration.codes.sealingKey!,
            signingKeyPEM: try KeyMaterial.idTokenSigningKey(harness.configuration, generate: TokenIssuer.generatePrivateKeyPEM),
            logger: harness.logs.logger())
        dependencies.clock = harness.clock
        let app = HeraldAPI.buildApplication(dependencies, logger: harness.logs.logger())
        // Outside `harness.run`, so the clean-up is this test's: the store's checkpoint thread and file.
        let store = dependencies.store as? SQLStore
        let stateDir = harness.settings.stateDir
        let cleanUp: @Sendable () async -> Void = {
            await store?.close()
            try? FileManager.default.removeItem(atPath: stateDir)
        }
        do {
            try await app.test(.live) { testClient in
                let client = HeraldClient(port: testClient.port!)
                #expect(try await client.get("/readyz").status == 503)
                for _ in 0..<3 {
                    let answer = try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550100"])
                    #expect(answer.status == 503)
                    #expect(answer.errorMessage?.hasPrefix("UNAVAILABLE : ") == true)
                    #expect(answer.header("retry-after") == "5")
                    #expect(answer.json["sessionInfo"] == nil)
                }
                #expect(try await client.get("/healthz").status == 200)
                // Test numbers need no broker.
                #expect(try await client.post(Paths.v1 + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+16505553434"]).status == 200)
            }
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }
}
