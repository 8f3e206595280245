import Foundation
import HeraldCore

/// `sms`: provider settings and message texts.
public struct SMSSettings: Sendable {
    /// Placeholders an SMS text may use.
    public static let textPlaceholders: Set<String> = ["code", "app", "minutes"]
    /// Message templates every locale directory may hold (`en` must hold all).
    public static let templateNames = ["verification", "mfa"]

    /// The providers SMS go through, in the order `sms.providers` lists them. Without that list, the
    /// one `sms.provider` names (`sms.http` is then the provider `http`).
    public var providers: [SMSProviderSettings]
    /// `sms.routes`: the chain of providers per destination (without it, every provider in list order).
    public var routes: SMSRoutes
    /// `sms.callbackBaseUrl`: the public base URL providers send receipts to
    /// (`<callbackBaseUrl>/callbacks/sms/<name>`); nil: no receipts are asked for.
    public var callbackBaseURL: String?
    /// The file lists `sms.providers` (else `providers` holds the one `sms.provider` names).
    public var providersListed: Bool
    /// Without `sms.providers`: the single provider.
    public var provider: Provider

    /// Where SMS go.
    public enum Provider: String, Sendable, CaseIterable {
        /// The generic HTTP gateway (`sms.http`).
        case http
        /// The terminal, for development (devMode only).
        case console
    }
    public var http: HTTPGateway
    /// Directory of message texts per locale (`<dir>/<locale>/verification.txt`).
    public var templateDir: String
    /// The texts, loaded from `templateDir` by `ConfigurationLoader`.
    public var templates: TemplateCatalog
    /// Minimum time between two SMS to one number (workers delay the later one); zero disables.
    public var perNumberSpacing: Duration
    /// What a segment costs per destination country (ISO code), with an optional fallback.
    public var prices: Prices = Prices()

    /// `sms.prices`: `{US: {perSegment: 0.0079, currency: USD}, default: {…}}`, for
    /// `herald_sms_cost_total{country,currency}`; countries without a price (and no default) cost nothing there.
    public struct Prices: Sendable, Equatable {
        public struct Price: Sendable, Equatable {
            public var perSegment: Double
            public var currency: String

            public init(perSegment: Double, currency: String) {
                self.perSegment = perSegment
                self.currency = currency
            }
        }
        public var byCountry: [String: Price]
        public var fallback: Price?

        public init(byCountry: [String: Price] = [:], fallback: Price? = nil) {
            self.byCountry = byCountry
            self.fallback = fallback
        }

        /// The price of an SMS to `country`, if any.
        public func price(for country: String) -> Price? { byCountry[country] ?? fallback }
    }

    /// `sms.provider` as a provider of the list: `http` (the gateway `sms.http`) or `console`.
    public static func legacyProvider(_ provider: Provider, http: HTTPGateway, breaker: CircuitBreaker.Settings = .init()) -> SMSProviderSettings {
        SMSProviderSettings(
            name: provider.rawValue, account: provider == .http ? .http(http) : .console, baseURL: "",
            rate: provider == .http ? http.rate : nil, maxInFlight: 1000, timeout: http.timeout, senders: .init(), breaker: breaker)
    }

    /// The provider named `name`.
    public func provider(named name: String) -> SMSProviderSettings? { providers.first { $0.name == name } }

    /// `sms.http`: the generic HTTP gateway.
    public struct HTTPGateway: Sendable {
        /// Placeholders a gateway request body may use.
        public static let bodyPlaceholders: Set<String> = ["to", "body", "reference", "expiresAt", "project"]
        /// Default gateway body: JSON, escaped as JSON strings.
        public static let defaultBody = #"{"to":"{{to}}","body":"{{body}}","reference":"{{reference}}"}"#

        public var url: String?
        public var headers: [String: String]
        /// Request body; placeholders `{{to}}`, `{{body}}`, `{{reference}}`, `{{expiresAt}}`.
        public var bodyTemplate: Template
        /// Content-Type of the body; decides how placeholder values are escaped.
        public var contentType: String
        public var timeout: Duration
        /// Provider throughput, shared by every sms worker through the store (nil: unlimited).
        public var rate: RatePolicy?
        /// Key of the HMAC-SHA256 that signs the gateway's delivery receipts
        /// (`POST /callbacks/sms/http`, `ReceiptSignature`); nil turns receipts off.
        public var callbackSecret: Data?
        /// A JSON pointer (RFC 6901, `/id`, `/messages/0/id`) to the provider's message id in the
        /// gateway's 2xx answer; nil when the gateway gives none.
        public var messageIdPath: String?
        /// A JSON pointer (`/code`, `/error/code`) to the provider's own error code in a non-2xx answer;
        /// its value becomes the outcome's code (the ledger, `herald_worker_provider_errors_total{code}`).
        /// nil: `http_<status>`.
        public var errorCodePath: String? = nil

        /// No gateway (the file lists `sms.providers` instead).
        public static var unset: HTTPGateway {
            HTTPGateway(
                // A constant that parses.
                url: nil, headers: [:], bodyTemplate: try! Template(defaultBody, allowed: bodyPlaceholders), contentType: "application/json",
                timeout: .seconds(10),
                rate: nil, callbackSecret: nil, messageIdPath: nil)
        }

        public init(
            url: String?, headers: [String: String], bodyTemplate: Template, contentType: String, timeout: Duration, rate: RatePolicy?,
            callbackSecret: Data?, messageIdPath: String?, errorCodePath: String? = nil
        ) {
            self.url = url
            self.headers = headers
            self.bodyTemplate = bodyTemplate
            self.contentType = contentType
            self.timeout = timeout
            self.rate = rate
            self.callbackSecret = callbackSecret
            self.messageIdPath = messageIdPath
            self.errorCodePath = errorCodePath
        }
    }

    public init(
        provider: Provider, http: HTTPGateway, templateDir: String, templates: TemplateCatalog, perNumberSpacing: Duration, prices: Prices = Prices(),
        providers: [SMSProviderSettings]? = nil, routes: SMSRoutes? = nil, callbackBaseURL: String? = nil
    ) {
        self.provider = provider
        self.http = http
        self.providersListed = providers != nil
        let providers = providers ?? [Self.legacyProvider(provider, http: http)]
        self.providers = providers
        self.routes = routes ?? SMSRoutes(defaultChain: providers.map(\.name))
        self.callbackBaseURL = callbackBaseURL
        self.templateDir = templateDir
        self.templates = templates
        self.perNumberSpacing = perNumberSpacing
        self.prices = prices
    }
}
