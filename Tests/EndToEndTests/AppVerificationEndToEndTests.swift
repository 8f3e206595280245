import Crypto
import Foundation
import HeraldChannels
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import JWTKit
import Testing

/// A fake APNs and the .p8-style key file the push worker signs with.
struct APNsFixture {
    static let keyID = "TESTKEY001"
    static let teamID = "TESTTEAM01"
    static let bundle = "com.example.herald"
    let apns: FakeAPNs
    let keyFile: String

    static func start() async throws -> APNsFixture {
        let key = P256.Signing.PrivateKey()
        let keyFile = NSTemporaryDirectory() + "AuthKey_\(keyID)-\(UUID().uuidString.prefix(8)).p8"
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
        let apns = try await FakeAPNs.start(keyID: keyID, teamID: teamID, key: key.publicKey, topics: [bundle])
        return APNsFixture(apns: apns, keyFile: keyFile)
    }

    func configure(_ settings: inout TestConfiguration) {
        settings.apnsURL = apns.url
        settings.apnsCAFile = apns.caFile
        settings.apnsKey = (Self.keyID, Self.teamID, keyFile)
    }

    func stop() async {
        await apns.stop()
        try? FileManager.default.removeItem(atPath: keyFile)
    }
}

@Suite("End to end: silent-push app verification, localized SMS (real processes)", .serialized)
struct AppVerificationEndToEndTests {
    static let device = String(repeating: "5e", count: 32)
    static let bundleHeader = ("X-Ios-Bundle-Identifier", APNsFixture.bundle)
    let key = TestConfiguration.apiKey
    let v1 = "/identitytoolkit.googleapis.com/v1/accounts:"

    func waitForPushes(_ fixture: APNsFixture, _ count: Int, _ stack: StackHarness) async throws {
        guard await eventually(timeout: .seconds(30), { fixture.apns.received.count >= count }) else {
            throw TestFailure("fake APNs got \(fixture.apns.received.count) of \(count) pushes:\n\(stack.allOutput.suffix(4000))")
        }
    }

    @Test("verifyClient → silent push at APNs → its secret → sendVerificationCode → SMS → sign in")
    func handshake() async throws {
        let fixture = try await APNsFixture.start()
        defer { Task { await fixture.stop() } }
        try await StackHarness.run(configure: {
            fixture.configure(&$0)
            $0.appVerification = "{required: true, pushTTL: 2m}"
            $0.originDomain = "auth.example.com"
        }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            try await stack.startPushWorker()

            let verify = try await stack.client.post(
                v1 + "verifyIosClient", apiKey: key, json: ["appToken": Self.device, "isSandbox": true], headers: [Self.bundleHeader])
            #expect(verify.status == 200)
            let receipt = try #require(verify.string("receipt"))
            try await waitForPushes(fixture, 1, stack)
            let push = try #require(fixture.apns.received.first)
            #expect(push.problems == [], "the fake APNs refused the push: \(push.problems)")
            #expect(push.deviceToken == Self.device)
            #expect(push.headers["apns-topic"] == APNsFixture.bundle)
            #expect(push.headers["apns-push-type"] == "background")
            #expect(push.headers["apns-priority"] == "5")
            let expiration = try #require(push.headers["apns-expiration"].flatMap(Int.init))
            #expect(abs(Double(expiration) - push.arrivedAt.timeIntervalSince1970 - 120) < 5)
            #expect(push.receipt == receipt)
            let secret = try #require(push.secret)

            // What the iOS SDK does next: the send carries the pair from the push.
            let sent = try await stack.client.post(
                v1 + "sendVerificationCode", apiKey: key,
                json: ["phoneNumber": "+15555550100", "iosReceipt": receipt, "iosSecret": secret], headers: [Self.bundleHeader])
            #expect(sent.status == 200)
            let session = try #require(sent.string("sessionInfo"))
            try await stack.waitForGateway(1)
            let sms = try #require(stack.gateway.received.first?.text)
            let code = try #require(StackHarness.code(in: sms))
            #expect(sms.hasSuffix("\n\n@auth.example.com #\(code)"))

            let signedIn = try await stack.client.post(v1 + "signInWithPhoneNumber", apiKey: key, json: ["sessionInfo": session, "code": code])
            #expect(signedIn.status == 200)
            #expect(signedIn.string("phoneNumber") == "+15555550100")

            // The push job is recorded as sent, once.
            let store = try await stack.store
            let jobID = try #require(push.headers["apns-id"].flatMap(UUID.init(uuidString:)))
            #expect(await eventually { (try? await store.deliveryStatus(jobID: jobID))??.status == .sent })
            #expect(fixture.apns.received.count == 1)

            let leaks = linesLeaking([secret, receipt, code, session, Self.device], in: stack.allOutput)
            #expect(leaks.isEmpty, "secrets in process output: \(leaks)")
        }
    }

    @Test("410 Unregistered: no retry, the device token is remembered and verifyClient answers INVALID_APP_CREDENTIAL")
    func unregistered() async throws {
        let fixture = try await APNsFixture.start()
        defer { Task { await fixture.stop() } }
        try await StackHarness.run(configure: { fixture.configure(&$0) }) { stack in
            try await stack.startAPI()
            try await stack.startPushWorker()
            fixture.apns.script([.init(status: 410, reason: "Unregistered", timestamp: 1_790_000_000_000)])
            let first = try await stack.client.post(
                v1 + "verifyIosClient", apiKey: key, json: ["appToken": Self.device], headers: [Self.bundleHeader])
            #expect(first.status == 200)
            try await waitForPushes(fixture, 1, stack)
            let store = try await stack.store
            let hash = SHA256Hex.digest(Self.device)
            #expect(await eventually { (try? await store.invalidDeviceToken(hash: hash)) == "Unregistered" })
            let jobID = try #require(fixture.apns.received.first?.headers["apns-id"].flatMap(UUID.init(uuidString:)))
            #expect(await eventually { (try? await store.deliveryStatus(jobID: jobID))??.status == .failed })

            let again = try await stack.client.post(
                v1 + "verifyIosClient", apiKey: key, json: ["appToken": Self.device], headers: [Self.bundleHeader])
            #expect(again.errorMessage == "INVALID_APP_CREDENTIAL")
            try await Task.sleep(for: .seconds(1))
            #expect(fixture.apns.received.count == 1, "no resend to a dead token")
        }
    }

    @Test("503 and 429 from APNs are retried through the delay queues; the push arrives once accepted")
    func retried() async throws {
        let fixture = try await APNsFixture.start()
        defer { Task { await fixture.stop() } }
        try await StackHarness.run(configure: { fixture.configure(&$0) }) { stack in
            try await stack.startAPI()
            try await stack.startPushWorker()
            fixture.apns.script([.init(status: 503, reason: "ServiceUnavailable"), .init(status: 429, reason: "TooManyRequests")])
            let verify = try await stack.client.post(
                v1 + "verifyIosClient", apiKey: key, json: ["appToken": Self.device], headers: [Self.bundleHeader])
            #expect(verify.status == 200)
            try await waitForPushes(fixture, 3, stack)
            let pushes = fixture.apns.received
            #expect(Set(pushes.compactMap { $0.headers["apns-id"] }).count == 1, "the same job (same apns-id) each time")
            let store = try await stack.store
            let jobID = try #require(pushes.first?.headers["apns-id"].flatMap(UUID.init(uuidString:)))
            #expect(await eventually { (try? await store.deliveryStatus(jobID: jobID))??.status == .sent })
            #expect(try await store.deliveryStatus(jobID: jobID)?.attempts == 3)
            try await Task.sleep(for: .seconds(1))
            #expect(fixture.apns.received.count == 3)
        }
    }

    @Test("the push worker refuses to start without an APNs key: exit 78 naming push.apns.keyId")
    func missingKey() async throws {
        try await StackHarness.run { stack in
            let process = try HeraldProcess("herald-push-worker", arguments: ["--config", stack.configPath], logDirectory: stack.settings.stateDir)
            #expect(await process.waitForExit(timeout: .seconds(20)) == 78)
            #expect(process.output.contains("push.apns.keyId"))
        }
    }

    @Test("locale from X-Firebase-Locale or languageCode with fallback; segments recorded per message and summed by country")
    func localizedTexts() async throws {
        try await StackHarness.run(configure: { $0.androidAppHash = "FA+9qCX9VSu" }) { stack in
            try await stack.startAPI()
            let metricsPort = freePort()
            try await stack.startWorker(metricsPort: metricsPort)
            let cases: [(phone: String, header: String?, languageCode: String?, start: String, encoding: String)] = [
                ("+15555550100", "de-AT", nil, " ist Ihr Bestätigungscode für Herald Test.", "GSM-7"),
                ("+15555550101", nil, "fr", " est votre code de vérification pour Herald Test.", "GSM-7"),
                ("+15555550102", "xx-YY", nil, " is your verification code for Herald Test.", "GSM-7"),
                ("+15555550103", "ru", nil, "", "UCS-2"),
                ("+15555550104", nil, "zh-Hans-CN", "", "UCS-2"),
            ]
            for (index, item) in cases.enumerated() {
                var json: [String: any Sendable] = ["phoneNumber": item.phone]
                if let languageCode = item.languageCode { json["languageCode"] = languageCode }
                let answer = try await stack.client.post(
                    v1 + "sendVerificationCode", apiKey: key, json: json, headers: item.header.map { [("X-Firebase-Locale", $0)] } ?? [])
                #expect(answer.status == 200)
                try await stack.waitForGateway(index + 1)
            }
            let store = try await stack.store
            let templates = try ConfigurationLoaderTemplates.catalog()
            for item in cases {
                let sms = try #require(stack.gateway.received.first { $0.to == item.phone })
                let text = try #require(sms.text)
                let code = try #require(StackHarness.code(in: text))
                let lines = text.components(separatedBy: "\n")
                #expect(lines.last == "FA+9qCX9VSu", "the SMS Retriever hash ends the message")
                let locale = item.header ?? item.languageCode
                let expected = try #require(templates.template("verification", locale: locale)).template.render([
                    "code": code, "app": "Herald Test", "minutes": "5",
                ])
                #expect(lines.first == expected)
                if item.start.isEmpty == false { #expect(lines.first?.hasSuffix(item.start) == true, "\(text)") }
                let jobID = try #require(sms.reference.flatMap(UUID.init(uuidString:)))
                #expect(await eventually { (try? await store.recordedSegments(jobID: jobID)) != nil })
                let recorded = try #require(try await store.recordedSegments(jobID: jobID))
                #expect(recorded.encoding == item.encoding, "\(text)")
                #expect(recorded.segments == SMSSegments(text).segments)
            }
            let metrics = String(decoding: try await HeraldClient(port: metricsPort).get("/metrics").body, as: UTF8.self)
            #expect(
                metrics.contains(#"herald_sms_segments_total{country="US",encoding="GSM-7"} 3"#),
                "\(metrics.split(separator: "\n").filter { $0.contains("segments") })")
            #expect(metrics.contains(#"herald_sms_segments_total{country="US",encoding="UCS-2"} 2"#))
        }
    }
}

/// The shipped templates, read as the executables read them.
enum ConfigurationLoaderTemplates {
    static func catalog() throws -> TemplateCatalog {
        try TestConfiguration().parsed().sms.templates
    }
}
