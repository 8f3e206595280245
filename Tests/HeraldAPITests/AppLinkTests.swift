import Foundation
import HeraldAMQP
import HeraldCore
import HeraldTesting
import Testing

/// Email links that open the app: ActionCodeSettings in the link, and the files universal links and
/// app links need on the action domain.
@Suite("Email links opening the app: ActionCodeSettings in the link, apple-app-site-association, assetlinks.json")
struct AppLinkTests {
    static let fingerprint = (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":")

    static func harness() throws -> APIHarness {
        try APIHarness { settings in
            settings.iosApps =
                #"[{bundleId: com.example.herald, teamId: ABCDE12345, reversedClientId: com.googleusercontent.apps.123-abc, appId: "1:123:ios:abc"}]"#
            settings.androidApps = "[{packageName: com.example.herald.android, sha256CertFingerprints: [\"\(fingerprint)\"]}]"
        }
    }

    @Test("canHandleCodeInApp puts ibi, apn, amv (and afl unless the Android app is to be installed) in the link; without it nothing")
    func linkParameters() async throws {
        let harness = try Self.harness()
        try await harness.run { client, admin in
            func link(_ extra: [String: any Sendable]) async throws -> [String: String] {
                var body: [String: any Sendable] = [
                    "requestType": "EMAIL_SIGNIN", "email": "ann@example.com", "continueUrl": "https://app.example.com/finish",
                ]
                for (key, value) in extra { body[key] = value }
                let sent = try await client.post(Paths.v1 + "sendOobCode", apiKey: TestConfiguration.apiKey, json: body)
                guard sent.status == 200 else { throw TestFailure("sendOobCode: \(sent.errorMessage ?? "")") }
                let jobs = try await harness.publishedEmailJobs(admin)
                return queryItems(try harness.link(in: try #require(jobs.first).1))
            }
            let install = try await link([
                "canHandleCodeInApp": true, "iOSBundleId": "com.example.herald", "androidPackageName": "com.example.herald.android",
                "androidInstallApp": true, "androidMinimumVersion": "12",
            ])
            #expect(install["ibi"] == "com.example.herald" && install["apn"] == "com.example.herald.android" && install["amv"] == "12")
            #expect(install["afl"] == nil && install["mode"] == "signIn" && install["oobCode"] != nil)
            let web = try await link(["canHandleCodeInApp": true, "androidPackageName": "com.example.herald.android", "androidInstallApp": false])
            #expect(web["afl"] == "https://app.example.com/finish" && web["ibi"] == nil)
            let plain = try await link(["iOSBundleId": "com.example.herald"])
            #expect(plain["ibi"] == nil && plain["apn"] == nil, "without canHandleCodeInApp the link is for the browser")
            let bad = try await client.post(
                Paths.v1 + "sendOobCode", apiKey: TestConfiguration.apiKey,
                json: [
                    "requestType": "EMAIL_SIGNIN", "email": "ann@example.com", "continueUrl": "https://app.example.com/finish",
                    "canHandleCodeInApp": true, "iOSBundleId": "com.example/../evil",
                ])
            #expect(bad.errorMessage?.hasPrefix("INVALID_ARGUMENT") == true)

            // An Android browser reaching the handler for an install link goes to the store; a desktop one to the continue URL.
            var fields = install
            fields["continueUrl"] = "https://app.example.com/finish"
            let query = fields.map { "\($0.key)=\(SignInLink.percentEncode($0.value))" }.joined(separator: "&")
            let android = try await client.get("/__/auth/action?" + query, headers: [("User-Agent", "Mozilla/5.0 (Linux; Android 14)")])
            #expect(android.status == 303)
            #expect(android.header("Location") == "https://play.google.com/store/apps/details?id=com.example.herald.android")
            let desktop = try await client.get("/__/auth/action?" + query, headers: [("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")])
            #expect(desktop.header("Location")?.hasPrefix("https://app.example.com/finish?") == true)
        }
    }

    @Test("apple-app-site-association names <teamId>.<bundleId> for the action path; assetlinks.json each package with its fingerprints")
    func wellKnownFiles() async throws {
        let harness = try Self.harness()
        try await harness.run { client, _ in
            let association = try await client.get("/.well-known/apple-app-site-association")
            #expect(association.status == 200 && association.header("Content-Type")?.hasPrefix("application/json") == true)
            let details = ((association.json["applinks"] as? [String: Any])?["details"] as? [[String: Any]]) ?? []
            #expect(details.count == 1)
            #expect(details.first?["appID"] as? String == "ABCDE12345.com.example.herald")
            #expect(details.first?["appIDs"] as? [String] == ["ABCDE12345.com.example.herald"])
            #expect(details.first?["paths"] as? [String] == ["/__/auth/action*"])
            #expect((details.first?["components"] as? [[String: String]])?.first?["/"] == "/__/auth/action*")

            let links = try await client.get("/.well-known/assetlinks.json")
            let statements = try #require(try JSONSerialization.jsonObject(with: links.body) as? [[String: Any]])
            #expect(statements.count == 1)
            #expect(statements.first?["relation"] as? [String] == ["delegate_permission/common.handle_all_urls"])
            let target = statements.first?["target"] as? [String: Any]
            #expect(target?["namespace"] as? String == "android_app" && target?["package_name"] as? String == "com.example.herald.android")
            #expect(target?["sha256_cert_fingerprints"] as? [String] == [Self.fingerprint])
        }
    }
}
