import Foundation
import HeraldCore
import HeraldCurl
import Logging

/// Silent pushes over APNs: HTTP/2 through libcurl, token authentication, one connection pool per
/// environment (one multi handle each, so a key's connections are never shared with another key or
/// host), streams multiplexed on it.
public struct APNsChannel: Sendable {
    /// Where and as whom to connect (`push.apns`).
    public struct Settings: Sendable {
        /// Overrides both Apple hosts (tests, relays).
        public var url: String?
        public var caFile: String?
        public var timeout: Duration

        public init(url: String?, caFile: String?, timeout: Duration) {
            self.url = url
            self.caFile = caFile
            self.timeout = timeout
        }
    }

    /// What happened to one push.
    public struct Result: Sendable, Equatable {
        public var outcome: DeliveryOutcome
        /// Set when APNs declared the device token dead (410 or BadDeviceToken/DeviceTokenNotForTopic).
        public var invalidToken: String?
        /// With 410: when APNs last knew the token valid (its `timestamp`).
        public var invalidSince: Date?

        public init(outcome: DeliveryOutcome, invalidToken: String? = nil, invalidSince: Date? = nil) {
            self.outcome = outcome
            self.invalidToken = invalidToken
            self.invalidSince = invalidSince
        }
    }

    /// Background pushes carry at most 4 KB.
    public static let maximumPayload = 4096

    let settings: Settings
    let token: APNsProviderToken
    let sandbox: CurlClient
    let production: CurlClient
    let logger: Logger

    public init(settings: Settings, token: APNsProviderToken, logger: Logger) {
        self.settings = settings
        self.token = token
        self.sandbox = CurlClient(logger: logger, maxConnectionsPerHost: 2)
        self.production = CurlClient(logger: logger, maxConnectionsPerHost: 2)
        self.logger = logger
    }

    func baseURL(_ environment: PushMessage.Environment) -> String {
        if let url = settings.url { return url.hasSuffix("/") ? String(url.dropLast()) : url }
        return environment == .sandbox ? "https://api.sandbox.push.apple.com" : "https://api.push.apple.com"
    }

    /// Stops both connection pools; pushes in flight fail.
    public func shutdown() {
        sandbox.shutdown()
        production.shutdown()
    }

    /// The payload Firebase's iOS SDK looks for: `aps.content-available` and the receipt/secret pair.
    public static func payload(receipt: String, secret: String) -> Data {
        let object: [String: Any] = ["aps": ["content-available": 1], "com.google.firebase.auth": ["receipt": receipt, "secret": secret]]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    /// Sends one background push that expires at `expiresAt` (a late secret is useless).
    public func send(_ message: PushMessage, secret: String, jobID: UUID, expiresAt: Date, now: Date) async -> Result {
        guard let receipt = message.payload["receipt"] else { return Result(outcome: .permanent(reason: "payload.receipt is missing")) }
        let body = Self.payload(receipt: receipt, secret: secret)
        guard body.count <= Self.maximumPayload else { return Result(outcome: .permanent(reason: "payload exceeds 4 KB")) }
        let bearer: String
        do {
            bearer = try await token.token(now: now)
        } catch {
            return Result(outcome: .permanent(reason: "cannot sign the provider token: \(error)"))
        }
        let request = CurlHTTPRequest(
            url: baseURL(message.environment) + "/3/device/" + message.deviceToken,
            headers: [
                ("authorization", "bearer " + bearer),
                ("apns-push-type", "background"),
                ("apns-priority", "5"),
                ("apns-topic", message.topic),
                ("apns-expiration", String(Int(expiresAt.timeIntervalSince1970))),
                ("apns-id", jobID.lowercasedText),
                ("content-type", "application/json"),
            ],
            body: body, timeout: settings.timeout, version: .http2, caFile: settings.caFile)
        let client = message.environment == .sandbox ? sandbox : production
        let response: CurlHTTPResponse
        do {
            response = try await client.perform(request)
        } catch {
            switch error.kind {
            case .couldNotConnect, .timedOutBeforeSending, .cancelledBeforeSending, .other:
                return Result(outcome: .retryable(reason: "APNs unreachable: \(error.message)", retryAfter: nil, code: "unreachable"))
            case .failedAfterSending:
                return Result(outcome: .uncertain(reason: "APNs did not answer after the push was sent: \(error.message)", code: "no_answer"))
            case .configuration:
                return Result(outcome: .permanent(reason: "APNs request misconfigured (TLS/CA?): \(error.message)", code: "misconfigured"))
            }
        }
        guard response.httpVersion == 20 else {
            return Result(outcome: .retryable(reason: "APNs answered over HTTP/1 (HTTP/2 is required)", retryAfter: nil, code: "http1"))
        }
        let answer = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        let reason = answer?["reason"] as? String
        switch APNsVerdict.from(status: response.status, reason: reason) {
        case .sent:
            return Result(outcome: .sent(reference: response.header("apns-id")))
        case .invalidToken(let reason):
            let since = (answer?["timestamp"] as? Double).map { Date(timeIntervalSince1970: $0 / 1000) }
            return Result(
                outcome: .permanent(reason: "APNs \(response.status) \(reason)", code: Self.code(reason)), invalidToken: reason, invalidSince: since)
        case .providerTokenRefused(let reason):
            let renewed = (try? await token.renewAfterRefusal(now: now)) ?? false
            if renewed {
                logger.warning("APNs refused the provider token; minted a new one", metadata: ["reason": .string(reason)])
            } else {
                logger.critical(
                    "APNs refused a provider token younger than 20 minutes: check push.apns.keyId/teamId/keyFile and the clock",
                    metadata: ["reason": .string(reason)])
            }
            return Result(outcome: .retryable(reason: "APNs 403 \(reason)", retryAfter: nil, code: Self.code(reason)))
        case .retryable(let reason):
            let retryAfter: Duration? = reason == "TooManyProviderTokenUpdates" ? .seconds(60) : response.retryAfter
            return Result(outcome: .retryable(reason: "APNs \(response.status) \(reason)", retryAfter: retryAfter, code: Self.code(reason)))
        case .permanent(let reason):
            logger.error("APNs refused the push permanently", metadata: ["status": .stringConvertible(response.status), "reason": .string(reason)])
            return Result(outcome: .permanent(reason: "APNs \(response.status) \(reason)", code: Self.code(reason)))
        }
    }

    /// APNs's reason as a metric label: its documented names are short identifiers; anything else
    /// (an unknown body) is cut so a label cannot grow without bound.
    static func code(_ reason: String) -> String {
        let cleaned = reason.replacingOccurrences(of: " ", with: "_").filter { $0.isLetter || $0.isNumber || $0 == "_" }
        return cleaned.isEmpty ? "unknown" : String(cleaned.prefix(40))
    }
}
