import Foundation
import HeraldCore

/// One entry of `sms.providers`: a provider account Herald sends SMS through, by name.
public struct SMSProviderSettings: Sendable {
    /// `type`.
    public enum Kind: String, Sendable, CaseIterable {
        case twilio, vonage, telnyx, http, console
    }

    /// Unique; names the provider in routes, metrics, the ledger and its callback path.
    public var name: String
    public var account: Account
    public var kind: Kind {
        switch account {
        case .twilio: .twilio
        case .vonage: .vonage
        case .telnyx: .telnyx
        case .http: .http
        case .console: .console
        }
    }
    /// The provider's API base URL (`baseUrl`): its own unless a relay or a test server stands in.
    public var baseURL: String
    /// The provider's throughput, shared by every sms worker through the store (nil: unlimited).
    public var rate: RatePolicy?
    /// Requests one worker process has open at this account at once; a job finding every provider of
    /// its route full waits for a free one.
    public var maxInFlight: Int
    public var timeout: Duration
    public var senders: Senders
    /// `sms.breaker` with this provider's `breaker` overrides.
    public var breaker: CircuitBreaker.Settings

    public init(
        name: String, account: Account, baseURL: String, rate: RatePolicy?, maxInFlight: Int, timeout: Duration, senders: Senders,
        breaker: CircuitBreaker.Settings
    ) {
        self.name = name
        self.account = account
        self.baseURL = baseURL
        self.rate = rate
        self.maxInFlight = maxInFlight
        self.timeout = timeout
        self.senders = senders
        self.breaker = breaker
    }

    public enum Account: Sendable {
        case twilio(Twilio)
        case vonage(Vonage)
        case telnyx(Telnyx)
        /// The generic gateway: its request is configured whole (`url`, `bodyTemplate`, …).
        case http(SMSSettings.HTTPGateway)
        case console
    }

    /// The API base URL each type talks to by default.
    public static func defaultBaseURL(_ kind: Kind) -> String {
        switch kind {
        case .twilio: "https://api.twilio.com"
        case .vonage: "https://rest.nexmo.com"
        case .telnyx: "https://api.telnyx.com"
        case .http, .console: ""
        }
    }

    /// Twilio Programmable Messaging.
    public struct Twilio: Sendable {
        public var accountSid: String
        /// Verifies `X-Twilio-Signature` on status callbacks, and authenticates requests unless an API
        /// key is set.
        public var authToken: String
        /// `apiKeySid` and `apiKeySecret`: requests authenticate with the key instead of the token.
        public var apiKey: (sid: String, secret: String)?
        /// Twilio picks the sender from the service (instead of `senders`).
        public var messagingServiceSid: String?

        public init(accountSid: String, authToken: String, apiKey: (sid: String, secret: String)? = nil, messagingServiceSid: String? = nil) {
            self.accountSid = accountSid
            self.authToken = authToken
            self.apiKey = apiKey
            self.messagingServiceSid = messagingServiceSid
        }
    }

    /// Vonage SMS API.
    public struct Vonage: Sendable {
        /// `md5hash` (Vonage's default) or `sha256` (HMAC-SHA256).
        public typealias SignatureMethod = VonageSignature.Method

        public var apiKey: String
        /// Sent with each request unless the requests are signed.
        public var apiSecret: String?
        /// Signs requests (then `apiSecret` is not sent) and verifies signed delivery receipts.
        public var signatureSecret: String?
        public var signatureMethod: SignatureMethod
        /// Vonage signs receipts only when its support enables it, so unsigned receipts are taken only on
        /// `/callbacks/sms/<name>/<receiptToken>`, a path no one guesses.
        public var receiptToken: String?

        public init(
            apiKey: String, apiSecret: String?, signatureSecret: String?, signatureMethod: SignatureMethod = .md5hash, receiptToken: String? = nil
        ) {
            self.apiKey = apiKey
            self.apiSecret = apiSecret
            self.signatureSecret = signatureSecret
            self.signatureMethod = signatureMethod
            self.receiptToken = receiptToken
        }
    }

    /// Telnyx Messaging API v2.
    public struct Telnyx: Sendable {
        public var apiKey: String
        public var messagingProfileId: String?
        /// The account's Ed25519 public key (32 bytes), which verifies webhook signatures; nil: receipts
        /// are refused.
        public var publicKey: Data?

        public init(apiKey: String, messagingProfileId: String? = nil, publicKey: Data? = nil) {
            self.apiKey = apiKey
            self.messagingProfileId = messagingProfileId
            self.publicKey = publicKey
        }
    }

    /// `senders` (or `from`, shorthand for `{default: from}`): the sender per destination region.
    public struct Senders: Sendable, Equatable {
        public var byRegion: [String: String]
        public var fallback: String?

        public init(byRegion: [String: String] = [:], fallback: String? = nil) {
            self.byRegion = byRegion
            self.fallback = fallback
        }

        /// The sender for a destination in `region`, if any.
        public func sender(forRegion region: String) -> String? { byRegion[region] ?? fallback }

        /// The sender for `message`, its region read only when senders differ by region.
        public func sender(for message: OutgoingSMS) -> String? { byRegion.isEmpty ? fallback : sender(forRegion: message.region) }

        public var isEmpty: Bool { byRegion.isEmpty && fallback == nil }

        /// An E.164 number, or an alphanumeric sender ID (1–11 letters, digits or spaces, at least one
        /// letter), which is what carriers accept.
        public static func isValid(_ sender: String) -> Bool {
            if sender.first == "+" {
                let digits = sender.dropFirst()
                return (7...15).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber }
            }
            return (1...11).contains(sender.count) && sender.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == " ") }
                && sender.contains { $0.isLetter }
        }
    }
}
