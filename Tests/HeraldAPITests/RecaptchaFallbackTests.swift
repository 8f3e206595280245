import Foundation
import HeraldTesting
import Testing

/// The reCAPTCHA fallback the iOS SDK opens when the silent push does not arrive, driven in headless
/// Chromium with a fake widget that solves itself and a fake siteverify that accepts its token.
@Suite("reCAPTCHA fallback for apps: getProjectConfig, recaptchaParams, /__/auth/handler in headless Chromium")
struct RecaptchaFallbackTests {
    static let reversedClientID = "com.googleusercontent.apps.123-abc"

    static func harness(_ siteverify: FakeSiteverify) throws -> APIHarness {
        try APIHarness { settings in
            settings.iosApps =
                #"[{bundleId: com.example.herald, teamId: ABCDE12345, reversedClientId: \#(reversedClientID), appId: "1:123:ios:abc"}]"#
            settings.appVerification =
                "{required: true, captcha: {verifyUrl: \"\(siteverify.url)\", secret: \"s3cret\", siteKey: \"site-key-1\", widget: recaptcha, widgetScriptUrl: \"\(siteverify.widgetURL)\"}}"
        }
    }

    @Test("the page loads the widget, ends at the app's callback URL with the token, and the token passes sendVerificationCode")
    func fallback() async throws {
        let siteverify = try await FakeSiteverify.start(secret: "s3cret", verdicts: [FakeSiteverify.widgetToken: .init(success: true)])
        let harness = try Self.harness(siteverify)
        try await harness.run { client, admin in
            let key = TestConfiguration.apiKey
            let config = try await client.get("/www.googleapis.com/identitytoolkit/v3/relyingparty/getProjectConfig?key=\(key)")
            #expect(config.string("projectId") == TestConfiguration.projectID)
            #expect(config.json["authorizedDomains"] as? [String] == ["localhost", "app.example.com"])
            let params = try await client.get("/v1/recaptchaParams?key=\(key)")
            #expect(params.string("kind") == "identitytoolkit#GetRecaptchaParamResponse" && params.string("recaptchaSiteKey") == "site-key-1")
            let recaptchaConfig = try await client.get("/v2/recaptchaConfig?key=\(key)")
            #expect("\(recaptchaConfig.json)".contains("ENFORCE") == false, "a classic widget key does not make the SDK enforce Enterprise")

            // What the iOS SDK opens (PhoneAuthProvider.reCAPTCHAURL), with the client-id scheme.
            let page =
                client.baseURL + "/__/auth/handler?apiKey=\(key)&authType=verifyApp&ibi=com.example.herald"
                + "&v=ios%2F11.0.0&eventId=ABCDEFGHIJ&clientId=123-abc.apps.googleusercontent.com&hl=en"
            let script = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/captcha_page.py").path
            let output = try await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(script)) \(shellQuoted(page))")
            let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "\(output)")
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(seen["siteKey"] as? String == "site-key-1")
            let callback = try #require(seen["callback"] as? String, "\(seen)")
            // Parsed the way the SDK does: scheme://firebaseauth/link?deep_link_id=<URL with authType, eventId, recaptchaToken>.
            let components = try #require(URLComponents(string: callback))
            #expect(components.scheme == Self.reversedClientID && components.host == "firebaseauth" && components.path == "/link")
            let deepLink = try #require(components.queryItems?.first { $0.name == "deep_link_id" }?.value)
            let inner = Dictionary(
                (URLComponents(string: deepLink)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
            #expect(inner["authType"] == "verifyApp" && inner["eventId"] == "ABCDEFGHIJ")
            let token = try #require(inner["recaptchaToken"])
            #expect(token == FakeSiteverify.widgetToken)

            let sent = try await client.post(
                Paths.legacy + "sendVerificationCode", apiKey: key, json: ["phoneNumber": "+15555550188", "recaptchaToken": token])
            #expect(sent.status == 200, "\(sent.errorMessage ?? "")")
            #expect(siteverify.received.last?["response"] == FakeSiteverify.widgetToken)
            #expect(try await harness.publishedJobs(admin).count == 1)
        }
        await siteverify.stop()
    }

    @Test("a callback scheme no configured app has, an unknown bundle, or a bad event id gets no page")
    func refusals() async throws {
        let siteverify = try await FakeSiteverify.start(secret: "s3cret", verdicts: [:])
        let harness = try Self.harness(siteverify)
        try await harness.run { client, _ in
            let base = "/__/auth/handler?apiKey=\(TestConfiguration.apiKey)&authType=verifyApp&eventId=ABCDEFGHIJ"
            for query in [
                "&ibi=com.example.herald&clientId=evil.apps.googleusercontent.com", "&ibi=com.example.herald&appId=1:999:ios:evil",
                "&ibi=com.example.herald&callbackUrl=https://evil.example/steal", "&ibi=com.evil.app&clientId=abc-123.apps.googleusercontent.com",
                "&ibi=com.example.herald", "&ibi=com.example.herald&appId=1:123:ios:abc&eventId=%3Cscript%3E",
            ] {
                let answer = try await client.get(base + query)
                #expect(answer.status == 400, "\(query)")
                #expect(String(decoding: answer.body, as: UTF8.self).contains("<script") == false, "\(query)")
            }
            // The app-id scheme (when the app has no client id scheme registered) is served.
            let byAppID = try await client.get(base + "&ibi=com.example.herald&appId=1:123:ios:abc")
            #expect(byAppID.status == 200)
            let html = String(decoding: byAppID.body, as: UTF8.self)
            #expect(html.contains("app-1-123-ios-abc://firebaseauth/link?deep_link_id="))
            #expect(byAppID.header("Content-Security-Policy")?.contains("'strict-dynamic'") == true)
            let wrongKey = try await client.get(
                "/__/auth/handler?apiKey=nope&authType=verifyApp&ibi=com.example.herald&eventId=A&appId=1:123:ios:abc")
            #expect(wrongKey.status == 400)
        }
        await siteverify.stop()
    }
}
