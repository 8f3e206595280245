import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldChannels

@Suite("APNs: answers, provider token")
struct APNsVerdictTests {
    @Test("every status and reason of Apple's table maps to a decision")
    func mapping() {
        #expect(APNsVerdict.from(status: 200, reason: nil) == .sent)
        for (status, reason) in [(410, "Unregistered"), (410, "ExpiredToken"), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic")] {
            #expect(APNsVerdict.from(status: status, reason: reason) == .invalidToken(reason: reason))
        }
        for reason in ["ExpiredProviderToken", "InvalidProviderToken"] {
            #expect(APNsVerdict.from(status: 403, reason: reason) == .providerTokenRefused(reason: reason))
        }
        for (status, reason) in [
            (429, "TooManyRequests"), (429, "TooManyProviderTokenUpdates"), (500, "InternalServerError"),
            (503, "ServiceUnavailable"), (503, "Shutdown"), (400, "IdleTimeout"),
        ] {
            #expect(APNsVerdict.from(status: status, reason: reason) == .retryable(reason: reason))
        }
        for (status, reason) in [
            (400, "BadCollapseId"), (400, "BadExpirationDate"), (400, "BadMessageId"), (400, "BadPriority"), (400, "BadTopic"),
            (400, "DuplicateHeaders"), (400, "InvalidPushType"), (400, "MissingDeviceToken"), (400, "MissingTopic"),
            (400, "PayloadEmpty"), (400, "TopicDisallowed"), (403, "BadCertificate"), (403, "BadCertificateEnvironment"),
            (403, "Forbidden"), (403, "MissingProviderToken"), (403, "UnrelatedKeyIdInToken"), (403, "BadEnvironmentKeyInToken"),
            (404, "BadPath"), (405, "MethodNotAllowed"), (413, "PayloadTooLarge"),
        ] {
            #expect(APNsVerdict.from(status: status, reason: reason) == .permanent(reason: reason), "\(status) \(reason)")
        }
        #expect(APNsVerdict.from(status: 502, reason: nil) == .retryable(reason: "HTTP 502"))
    }

    @Test("the provider token is an ES256 JWT with kid, iss and a numeric iat, signed raw r‖s")
    func tokenShape() async throws {
        let key = P256.Signing.PrivateKey()
        let token = try APNsProviderToken(keyPEM: key.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let jwt = try await token.token(now: now)
        let parts = jwt.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let headerData = try #require(Data(base64URL: parts[0]))
        let claimsData = try #require(Data(base64URL: parts[1]))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "KEY1234567")
        #expect(claims["iss"] as? String == "TEAM123456")
        #expect(claims["iat"] as? Int == 1_800_000_000)
        #expect(parts[1].contains("=") == false)
        let signature = try #require(Data(base64URL: parts[2]))
        #expect(signature.count == 64)
        #expect(
            key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Data((parts[0] + "." + parts[1]).utf8))
        )
    }

    @Test("one token is reused for 50 minutes; a refusal renews it only when it is 20 minutes old")
    func tokenLifetime() async throws {
        let token = try APNsProviderToken(keyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try await token.token(now: start)
        #expect(try await token.token(now: start.addingTimeInterval(49 * 60)) == first)
        #expect(try await token.renewAfterRefusal(now: start.addingTimeInterval(19 * 60)) == false)
        #expect(try await token.token(now: start.addingTimeInterval(19 * 60)) == first)
        #expect(try await token.renewAfterRefusal(now: start.addingTimeInterval(20 * 60)) == true)
        let second = try await token.token(now: start.addingTimeInterval(21 * 60))
        #expect(second != first)
        #expect(await token.issuedAt == start.addingTimeInterval(20 * 60))
        // Renewed at 20 min, so the next lifetime ends at 70 min.
        #expect(try await token.token(now: start.addingTimeInterval(69 * 60)) == second)
        #expect(try await token.token(now: start.addingTimeInterval(70 * 60)) != second)
    }

    @Test("the host follows the job's environment unless push.apns.url overrides both")
    func hosts() throws {
        let token = try APNsProviderToken(keyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T")
        let apple = APNsChannel(settings: .init(url: nil, caFile: nil, timeout: .seconds(5)), token: token, logger: quietLogger())
        #expect(apple.baseURL(.sandbox) == "https://api.sandbox.push.apple.com")
        #expect(apple.baseURL(.production) == "https://api.push.apple.com")
        let relay = APNsChannel(
            settings: .init(url: "https://relay.example/", caFile: nil, timeout: .seconds(5)), token: token, logger: quietLogger())
        #expect(relay.baseURL(.sandbox) == "https://relay.example")
        #expect(relay.baseURL(.production) == "https://relay.example")
    }
}

@Suite("APNs channel against a fake APNs (HTTP/2 over TLS, test CA)")
struct APNsChannelTests {
    static let bundle = "com.example.herald"
    static let device = String(repeating: "ab", count: 32)

    struct Fixture {
        let key = P256.Signing.PrivateKey()
        let apns: FakeAPNs
        let token: APNsProviderToken
        let channel: APNsChannel

        init() async throws {
            apns = try await FakeAPNs.start(keyID: "KEYID00001", teamID: "TEAMID0001", key: key.publicKey, topics: [APNsChannelTests.bundle])
            token = try APNsProviderToken(keyPEM: key.pemRepresentation, keyID: "KEYID00001", teamID: "TEAMID0001")
            channel = APNsChannel(settings: .init(url: apns.url, caFile: apns.caFile, timeout: .seconds(10)), token: token, logger: quietLogger())
        }

        func push(receipt: String = "receipt-1", now: Date = Date(), id: UUID = UUID()) async -> APNsChannel.Result {
            let message = PushMessage(
                deviceToken: APNsChannelTests.device, environment: .sandbox, topic: APNsChannelTests.bundle, payload: ["receipt": receipt])
            return await channel.send(message, secret: "secret-1", jobID: id, expiresAt: now.addingTimeInterval(300), now: now)
        }
    }

    @Test("a well-formed background push: signed token, headers, payload; 200 is sent")
    func wellFormed() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        let id = UUID()
        let now = Date()
        let result = await fixture.push(now: now, id: id)
        #expect(result == .init(outcome: .sent(reference: id.uuidString.lowercased())))
        let push = try #require(fixture.apns.received.first)
        #expect(push.problems == [])
        #expect(push.path == "/3/device/" + Self.device)
        #expect(push.headers["apns-push-type"] == "background")
        #expect(push.headers["apns-priority"] == "5")
        #expect(push.headers["apns-topic"] == Self.bundle)
        #expect(push.headers["apns-id"] == id.uuidString.lowercased())
        #expect(push.headers["apns-expiration"] == String(Int(now.timeIntervalSince1970 + 300)))
        #expect(push.receipt == "receipt-1")
        #expect(push.secret == "secret-1")
        let payload = try #require(try JSONSerialization.jsonObject(with: push.body) as? [String: Any])
        #expect((payload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
    }

    @Test("ten concurrent pushes on one channel all succeed with one provider token")
    func reuse() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        let results = await withTaskGroup(of: APNsChannel.Result.self) { group in
            for index in 0..<10 { group.addTask { await fixture.push(receipt: "r\(index)") } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { if case .sent = $0.outcome { true } else { false } })
        let received = fixture.apns.received
        #expect(received.count == 10)
        #expect(Set(received.compactMap(\.providerToken)).count == 1)
        #expect(received.allSatisfy { $0.problems.isEmpty })
    }

    @Test("410 Unregistered and 400 BadDeviceToken/DeviceTokenNotForTopic: permanent, device token reported invalid")
    func deadTokens() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        fixture.apns.script([
            .init(status: 410, reason: "Unregistered", timestamp: 1_790_000_000_000), .init(status: 400, reason: "BadDeviceToken"),
            .init(status: 400, reason: "DeviceTokenNotForTopic"),
        ])
        let unregistered = await fixture.push()
        #expect(unregistered.outcome == .permanent(reason: "APNs 410 Unregistered", code: "Unregistered"))
        #expect(unregistered.invalidToken == "Unregistered")
        #expect(unregistered.invalidSince == Date(timeIntervalSince1970: 1_790_000_000))
        #expect(await fixture.push().invalidToken == "BadDeviceToken")
        #expect(await fixture.push().invalidToken == "DeviceTokenNotForTopic")
    }

    @Test("429, 500 and 503 are retryable; TooManyProviderTokenUpdates waits a minute; BadTopic is permanent")
    func retryable() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        fixture.apns.script([
            .init(status: 429, reason: "TooManyRequests"), .init(status: 500, reason: "InternalServerError"),
            .init(status: 503, reason: "ServiceUnavailable"), .init(status: 429, reason: "TooManyProviderTokenUpdates"),
            .init(status: 400, reason: "BadTopic"),
        ])
        #expect(await fixture.push().outcome == .retryable(reason: "APNs 429 TooManyRequests", retryAfter: nil, code: "TooManyRequests"))
        #expect(await fixture.push().outcome == .retryable(reason: "APNs 500 InternalServerError", retryAfter: nil, code: "InternalServerError"))
        #expect(await fixture.push().outcome == .retryable(reason: "APNs 503 ServiceUnavailable", retryAfter: nil, code: "ServiceUnavailable"))
        #expect(
            await fixture.push().outcome
                == .retryable(reason: "APNs 429 TooManyProviderTokenUpdates", retryAfter: .seconds(60), code: "TooManyProviderTokenUpdates"))
        let badTopic = await fixture.push()
        #expect(badTopic.outcome == .permanent(reason: "APNs 400 BadTopic", code: "BadTopic"))
        #expect(badTopic.invalidToken == nil)
    }

    @Test("403 ExpiredProviderToken: a young token is kept (retry later), a 20-minute-old one is renewed")
    func providerTokenRefused() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        let start = Date()
        fixture.apns.script([.init(status: 403, reason: "ExpiredProviderToken"), .init(status: 403, reason: "ExpiredProviderToken")])
        #expect(
            await fixture.push(now: start).outcome
                == .retryable(reason: "APNs 403 ExpiredProviderToken", retryAfter: nil, code: "ExpiredProviderToken"))
        let first = try #require(fixture.apns.received.last?.providerToken)
        #expect(await fixture.token.issuedAt == start)
        // 25 minutes later the token is within its 50 minutes and still the same; refused again, it is renewed.
        let later = start.addingTimeInterval(25 * 60)
        #expect(
            await fixture.push(now: later).outcome
                == .retryable(reason: "APNs 403 ExpiredProviderToken", retryAfter: nil, code: "ExpiredProviderToken"))
        #expect(fixture.apns.received.last?.providerToken == first)
        #expect(await fixture.token.issuedAt == later)
        let id = UUID()
        #expect(await fixture.push(now: later, id: id).outcome == .sent(reference: id.uuidString.lowercased()))
        let renewed = try #require(fixture.apns.received.last?.providerToken)
        #expect(renewed != first)
        #expect(fixture.apns.received.last?.problems == [])
    }

    @Test("a token signed by another key is refused by the fake: 403 InvalidProviderToken")
    func wrongKey() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        let other = try APNsProviderToken(keyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEYID00001", teamID: "TEAMID0001")
        let channel = APNsChannel(
            settings: .init(url: fixture.apns.url, caFile: fixture.apns.caFile, timeout: .seconds(10)), token: other, logger: quietLogger())
        let message = PushMessage(deviceToken: Self.device, environment: .production, topic: Self.bundle, payload: ["receipt": "r"])
        let result = await channel.send(message, secret: "s", jobID: UUID(), expiresAt: Date().addingTimeInterval(60), now: Date())
        #expect(result.outcome == .retryable(reason: "APNs 403 InvalidProviderToken", retryAfter: nil, code: "InvalidProviderToken"))
        #expect(fixture.apns.received.first?.problems == ["InvalidProviderToken"])
    }

    @Test("without the test CA the TLS handshake fails and nothing is sent")
    func untrusted() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        let channel = APNsChannel(
            settings: .init(url: fixture.apns.url, caFile: nil, timeout: .seconds(10)), token: fixture.token, logger: quietLogger())
        let message = PushMessage(deviceToken: Self.device, environment: .sandbox, topic: Self.bundle, payload: ["receipt": "r"])
        let result = await channel.send(message, secret: "s", jobID: UUID(), expiresAt: Date().addingTimeInterval(60), now: Date())
        if case .sent = result.outcome { Issue.record("sent through an untrusted certificate") }
        #expect(fixture.apns.received.isEmpty)
    }

    @Test("a payload over 4 KB is refused before sending")
    func oversized() async throws {
        let fixture = try await Fixture()
        defer { Task { await fixture.apns.stop() } }
        let result = await fixture.push(receipt: String(repeating: "x", count: 5000))
        #expect(result.outcome == .permanent(reason: "payload exceeds 4 KB"))
        #expect(fixture.apns.received.isEmpty)
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
