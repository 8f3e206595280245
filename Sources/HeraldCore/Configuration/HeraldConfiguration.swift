import Foundation

/// The whole configuration (config/herald.yaml), validated in full at start-up by every executable.
///
/// Each nested type documents its keys; config/herald.yaml carries the same documentation for operators.
/// Sections for features that do not exist yet are parsed and validated so a file written today keeps
/// working, and are marked "not yet used" in the file.
public struct HeraldConfiguration: Sendable {
    public var http: HTTP
    public var state: State
    public var amqp: AMQP
    public var store: Store
    public var codes: Codes
    public var tokens: Tokens
    /// Enables dev-only behaviour: the console SMS provider and the emulator endpoints.
    public var devMode: Bool
    public var logging: Logging
    public var admin: Admin
    public var ledger: Ledger
    public var projects: [Project]
    public var limits: Limits
    public var sms: SMS
    public var email: Email
    public var push: Push
    public var workers: Workers
    public var integrations: Integrations = Integrations()
    /// `HERALD_*` variables that are not Herald's (Kubernetes service links, names under no top-level
    /// key); not a key, filled in by the loader so executables can mention them once.
    public var ignoredEnvironment: [String] = []

    /// `http`: where herald-api listens.
    public struct HTTP: Sendable {
        /// Bind address (default 127.0.0.1).
        public var host: String
        /// Port (default 9099, the Auth Emulator's, so SDK `useEmulator(host, 9099)` works).
        public var port: Int
        /// Proxies (addresses or CIDR blocks) whose `X-Forwarded-For` is believed for per-IP limits.
        public var trustedProxies: [IPNetwork]
        /// A connection that sends no complete request head, no body data, or no new request for this long
        /// is closed (slow or idle clients must not hold sockets forever).
        public var idleTimeout: Duration
        /// Open connections each listener (herald-api's public and metrics ports, each worker's) holds at
        /// most; at the cap it accepts no more until one closes. Default: `maxConnections(fileLimit:)` of
        /// the process's open-file limit.
        public var maxConnections: Int
        /// herald-api's `/metrics` (with `/healthz`, `/readyz`) listens here, not on the public port
        /// (default 127.0.0.1:9100: scrape it from the host, or set 0.0.0.0 behind a firewall).
        public var metricsHost: String
        public var metricsPort: Int

        /// The fewest connections a listener may be limited to.
        public static let minimumConnections = 16

        /// Half of what the open-file limit leaves once 256 descriptors are set aside for the store, the
        /// broker, outbound calls and logs: each connection holds one descriptor, and herald-api has two
        /// listeners. Never below `minimumConnections`; an unlimited limit counts as 2^20.
        public static func maxConnections(fileLimit: UInt64) -> Int {
            let files = Int(min(fileLimit, 1 << 20))
            return max(minimumConnections, (files - 256) / 2)
        }

        /// True when `host` is a loopback address (where dev mode may listen).
        public var isLoopback: Bool { IPAddress.isLoopback(host: host) }
    }

    /// `state`: the one directory Herald writes to (generated keys, SQLite file, local broker data).
    public struct State: Sendable {
        public var dir: String
    }

    /// `amqp`: the broker.
    public struct AMQP: Sendable {
        /// The nodes of the broker (`amqp.url`: one URL or a list), tried in order on every (re)connect.
        /// Passwords from `passwordFile` are already in them once `ConfigurationLoader` has loaded the file.
        public var endpoints: [AMQPEndpoint]
        /// For `amqps://` nodes.
        public var tls: TLS
        /// A file holding the broker password (instead of the URLs'), e.g. a mounted Kubernetes Secret.
        public var passwordFile: String?
        /// Exchange name; queue names derive from it (`<exchange>.sms`, `<exchange>.sms.dead`, …).
        public var exchange: String
        /// `quorum` (default) or `classic` work queues.
        public var queueType: String
        /// Unacknowledged deliveries per worker connection.
        public var prefetch: Int
        /// Heartbeat interval negotiated with the broker.
        public var heartbeat: Duration
        /// Deliveries of one message before the broker dead-letters it as poison (`x-delivery-limit`).
        public var deliveryLimit: Int
        /// How long the API waits for a publisher confirm before answering 503.
        public var publishTimeout: Duration
        /// TCP connect and login timeout.
        public var connectTimeout: Duration
        /// RabbitMQ's management API (`http://host:15672`), asked with the first node's credentials for what
        /// AMQP does not report (unacknowledged messages); nil: not asked.
        public var managementURL: String? = nil

        /// `amqp.tls`: how `amqps://` connections check the broker and prove themselves.
        public struct TLS: Sendable, Equatable {
            /// CA (PEM) that signed the brokers' certificates; nil = the system's roots.
            public var caFile: String?
            /// Client certificate and key (PEM) for brokers that require one (`fail_if_no_peer_cert`).
            public var certFile: String?
            public var keyFile: String?
            /// Check the broker's certificate and host name (default true; false only for a lab).
            public var verifyPeer: Bool

            public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, verifyPeer: Bool = true) {
                self.caFile = caFile
                self.certFile = certFile
                self.keyFile = keyFile
                self.verifyPeer = verifyPeer
            }
        }
    }

    /// `store`: `sqlite:<path>` (default `sqlite:<state.dir>/herald.sqlite`, one machine) or
    /// `postgres://user:password@host:port/db[?sslmode=…&schema=…]` (several machines).
    public struct Store: Sendable {
        /// As written (it may hold a password: log `location.redacted` instead).
        public var url: String
        public var location: StoreLocation
        /// PostgreSQL connections per process (`store.poolSize`, default 16).
        public var poolSize: Int
        /// How long to wait for PostgreSQL at start-up before giving up (`store.connectTimeout`).
        public var connectTimeout: Duration
        /// Extra CA (PEM) that signs the PostgreSQL server's certificate (`store.tls.caFile`).
        public var caFile: String?
        /// When a SQLite commit counts as done (`store.synchronous`); PostgreSQL's is the server's
        /// `synchronous_commit`.
        public var synchronous: SQLiteSynchronous

        public init(
            url: String, location: StoreLocation, poolSize: Int = 16, connectTimeout: Duration = .seconds(10), caFile: String? = nil,
            synchronous: SQLiteSynchronous = .full
        ) {
            self.url = url
            self.location = location
            self.poolSize = poolSize
            self.connectTimeout = connectTimeout
            self.caFile = caFile
            self.synchronous = synchronous
        }
    }

    /// SQLite's `synchronous` setting for its write-ahead log. Every answer Herald gives promises the
    /// send's rows (session, ledger row, limits) are there after a crash, as the broker's confirm
    /// promises the job; a claim and an outcome are what keep an SMS from going out twice.
    public enum SQLiteSynchronous: String, Sendable, CaseIterable {
        /// Each commit reaches the disk (`fdatasync` of the WAL) before its callers go on: the rows
        /// survive a process crash, a kernel crash and a power cut. One sync per group commit.
        case full
        /// Commits reach the OS only; the WAL is synced at checkpoints. The rows survive a process
        /// crash, but a kernel crash or power cut can lose the last commits while the broker keeps
        /// their jobs: those jobs are dead-lettered as unauthenticated (no ledger row), their codes
        /// fail to verify, and a claim or outcome lost with them can send an SMS twice.
        case normal
    }

    /// `codes`: secrets for one-time codes.
    public struct Codes: Sendable {
        /// 32 bytes shared by the API and all workers; nil = generate once into `state.dir`.
        public var sealingKey: Data?
    }

    /// `tokens`: ID tokens.
    public struct Tokens: Sendable {
        /// PEM RSA private key for RS256 ID tokens; nil = generate once into `state.dir`.
        public var signingKeyFile: String?
        public var idTokenTTL: Duration
        /// Sensitive changes (delete, email, password, phone, unlink, second factors) need a sign-in this
        /// recent (the ID token's `auth_time`), else CREDENTIAL_TOO_OLD_LOGIN_AGAIN.
        public var recentLogin: Duration
    }

    /// `logging`.
    public struct Logging: Sendable {
        /// trace, debug, info, notice, warning, error, critical.
        public var level: String
        /// `json` (one object per line) or `text`.
        public var format: String

        public init(level: String, format: String) {
            self.level = level
            self.format = format
        }
    }

    /// `admin`.
    public struct Admin: Sendable {
        /// Bearer tokens accepted on admin requests (`Authorization: Bearer <token>`): the
        /// `projects/{p}/accounts` endpoints and `returnOobLink`. firebase-admin in emulator-host mode
        /// sends `owner`, which only devMode accepts; otherwise tokens must be 32 characters or more.
        public var tokens: [String]
        /// Whether the status page's session cookie is `Secure` (sent over HTTPS only). Default: on
        /// unless devMode, also on a loopback bind (the usual set-up behind a TLS proxy).
        public var cookieSecure: Bool
    }

    /// `integrations`: systems other than herald-api that publish jobs to Herald's exchange.
    public struct Integrations: Sendable {
        /// `integrations.producers`: who may publish, with which key, for which projects and job types.
        public var producers: [Producer]

        public init(producers: [Producer] = []) { self.producers = producers }

        /// A foreign producer: sets `x-herald-producer: <id>` and signs each body with `key`
        /// (`x-herald-signature: sha256=<hex HMAC-SHA256>`).
        public struct Producer: Sendable, Equatable {
            public var id: String
            public var key: Data
            public var projects: [String]
            public var types: [JobType]

            public init(id: String, key: Data, projects: [String], types: [JobType]) {
                self.id = id
                self.key = key
                self.projects = projects
                self.types = types
            }
        }

        /// The producer id herald-api's own jobs carry; no configured producer may take it.
        public static let heraldAPI = "herald-api"
    }

    /// `ledger`: the delivery ledger operators read (`/admin/v1/messages`, `herald-admin messages`).
    public struct Ledger: Sendable {
        /// How long a message's row is kept after its last change; herald-api's housekeeping deletes
        /// older rows once a minute, in chunks, never in a request.
        public var retention: Duration

        public init(retention: Duration = .seconds(30 * 86_400)) { self.retention = retention }
    }

    /// `projects[]`: one Firebase-style project each, selected by API key.
    public struct Project: Sendable {
        public var id: String
        /// The app's name in message templates (`{{app}}`); defaults to the id.
        public var displayName: String
        public var apiKeys: [String]
        public var authorizedDomains: [String]
        /// Every iOS bundle id of the project: `iosBundleIds` (the shorthand) and those of `iosApps`.
        public var iosBundleIds: [String]
        /// `projects[].iosApps`: the project's iOS apps (universal links, the reCAPTCHA fallback's callback).
        public var iosApps: [IOSApp]
        /// `projects[].androidApps`: the project's Android apps (app links).
        public var androidApps: [AndroidApp]
        public var phone: Phone
        public var emailLink: EmailLink
        public var apple: Apple
        public var mfa: MFA
        public var appVerification: AppVerification

        /// An iOS app of the project.
        public struct IOSApp: Sendable, Equatable {
            public var bundleId: String
            /// The Apple developer team (apple-app-site-association names `<teamId>.<bundleId>`).
            public var teamId: String?
            /// `com.googleusercontent.apps.…`: the URL scheme the SDK returns to after the reCAPTCHA page.
            public var reversedClientId: String?
            /// The Firebase app id (`1:123:ios:abc`); the SDK's other callback scheme is `app-1-123-ios-abc`.
            public var appId: String?

            public init(bundleId: String, teamId: String? = nil, reversedClientId: String? = nil, appId: String? = nil) {
                self.bundleId = bundleId
                self.teamId = teamId
                self.reversedClientId = reversedClientId
                self.appId = appId
            }

            /// The URL schemes the app takes the reCAPTCHA result back on, as the iOS SDK builds them.
            public var callbackSchemes: [String] {
                [reversedClientId, appId.map { "app-" + $0.replacingOccurrences(of: ":", with: "-") }].compactMap { $0 }
            }
        }

        /// An Android app of the project.
        public struct AndroidApp: Sendable, Equatable {
            public var packageName: String
            /// SHA-256 fingerprints of the signing certificates (`AB:CD:…`), for assetlinks.json.
            public var sha256CertFingerprints: [String]
        }

        /// `projects[].phone`.
        public struct Phone: Sendable {
            public var enabled: Bool
            public var codeLength: Int
            public var codeTTL: Duration
            public var maxCheckAttempts: Int
            /// Reentrant-send window: a second send for the number with the same app credential within it
            /// gets the open session back and nothing is sent.
            public var resendAfter: Duration
            /// Fictional numbers (E.164) with fixed codes: no SMS, no job.
            public var testNumbers: [String: String]
            /// `testNumbers` may list real numbers (start-up logs a warning for each).
            public var testNumbersAllowReal: Bool
            /// SMS region policy.
            public var regions: Regions
            /// Domain for the origin-bound one-time-code line (`@example.com #123456`) appended to SMS.
            public var originDomain: String?
            /// The app's 11-character Android SMS Retriever hash, appended on its own line.
            public var androidAppHash: String?
        }

        /// `projects[].phone.regions`.
        public struct Regions: Sendable {
            public var allow: [String]
            public var deny: [String]

            public init(allow: [String], deny: [String]) {
                self.allow = allow
                self.deny = deny
            }
        }

        /// `projects[].emailLink`: passwordless sign-in by email.
        public struct EmailLink: Sendable {
            /// false answers OPERATION_NOT_ALLOWED.
            public var enabled: Bool
            /// How long a link works (EXPIRED_OOB_CODE after).
            public var linkTTL: Duration
            /// The handler the link points at (Herald's own `/__/auth/action`, or the app's page).
            public var actionUrl: String
            /// createAuthUri answers without revealing whether an address is registered (default on).
            public var enumerationProtection: Bool
            /// Custom URL schemes of the project's apps (`com.example.app`) a continue URL may use besides
            /// http and https.
            public var appSchemes: [String]
            /// Hosts a request may name as `linkDomain` (where the link, and so its code, goes): each
            /// exactly, ASCII and lowercase, besides `actionUrl`'s own host.
            public var linkDomains: [String] = []

            /// True when `host` may carry this project's links: `actionUrl`'s host or a listed link domain.
            public func isLinkDomain(_ host: String) -> Bool {
                URL(string: actionUrl)?.host?.lowercased() == host || linkDomains.contains(host)
            }
        }

        /// `projects[].apple`: Sign in with Apple (`signInWithIdp`) and token revocation (`revokeToken`).
        public struct Apple: Sendable {
            public var enabled: Bool
            /// Bundle ids and Services ids accepted as an identity token's `aud`; the first is the one
            /// authorization codes are exchanged under unless a revocation names another.
            public var clientIds: [String]
            public var jwksUrl: String
            public var tokenUrl: String
            public var revokeUrl: String
            /// Extra trusted CA (PEM) for the three URLs, for relays and tests.
            public var caFile: String?
            /// The Sign in with Apple key (.p8) for client secrets; all three or none. Without them
            /// `revokeToken` answers OPERATION_NOT_ALLOWED.
            public var teamId: String?
            public var keyId: String?
            public var keyFile: String?

            /// True when client secrets can be minted (revocation possible).
            public var canRevoke: Bool { teamId != nil && keyId != nil && keyFile != nil }
        }

        /// `projects[].mfa`: phone as a second factor.
        public struct MFA: Sendable {
            /// `enabled` or `disabled` (OPERATION_NOT_ALLOWED : SMS based MFA not enabled.).
            public var phone: String
            public var phoneEnabled: Bool { phone == "enabled" }
        }

        /// `projects[].appVerification`: proof that a send comes from the real app.
        public struct AppVerification: Sendable {
            /// False skips app verification entirely (server-to-server use; weaker).
            public var required: Bool
            /// Test numbers need no app credential.
            public var disabledForTesting: Bool
            /// How long an iOS receipt/secret pair may be reused.
            public var receiptTTL: Duration
            /// `apns-expiration` of the silent push.
            public var pushTTL: Duration
            /// How long the iOS SDK waits for the push (`suggestedTimeout`).
            public var suggestedTimeout: Duration
            /// A siteverify-compatible endpoint (reCAPTCHA, hCaptcha, Turnstile); nil = captcha refused.
            public var captchaVerifyUrl: String?
            public var captchaSecret: String?
            /// Minimum reCAPTCHA-style score, applied only when the answer carries one.
            public var captchaMinScore: Double
            /// The site key of the captcha widget (`captcha.siteKey`). With `widget: recaptchaEnterprise`
            /// `recaptchaConfig` tells SDKs to ENFORCE it.
            public var captchaSiteKey: String?
            /// Which widget the site key belongs to.
            public var captchaWidget: CaptchaWidget
            /// The widget's script, loaded by the reCAPTCHA fallback page (`/__/auth/handler`).
            public var captchaWidgetScriptUrl: String?

            /// A captcha widget: how the fallback page renders it.
            public enum CaptchaWidget: String, Sendable, CaseIterable {
                case recaptcha, recaptchaEnterprise, hcaptcha, turnstile
            }

            /// True when SDKs must send reCAPTCHA Enterprise tokens (`recaptchaConfig` ENFORCE).
            public var enforcesRecaptchaEnterprise: Bool { captchaSiteKey != nil && captchaWidget == .recaptchaEnterprise }
        }
    }

    /// `limits`: GCRA policies per key kind, shared by every API process through the store.
    public struct Limits: Sendable {
        public var perNumber: [RatePolicy]
        public var perIP: [RatePolicy]
        public var perProject: [RatePolicy]
        public var perCountry: [RatePolicy]
        public var perPrefix: [RatePolicy]
        /// Digits after `+` (calling code included) that make a prefix, for `perPrefix` and pumping.
        public var prefixDigits: Int
        public var checksPerNumber: [RatePolicy]
        /// Silent pushes (`verifyClient`) per device token.
        public var pushesPerDevice: [RatePolicy]
        /// Sign-in emails to one address.
        public var perEmail: [RatePolicy]
        /// `createAuthUri` (account lookups by email) per client address.
        public var lookupsPerIP: [RatePolicy]
        /// Password changes per user (each costs 0.2 s of PBKDF2).
        public var passwordChangesPerUser: [RatePolicy]
        /// Apple token revocations (`revokeToken`) per user and per client address: each is a call
        /// to Apple under the project's key.
        public var revocationsPerUser: [RatePolicy]
        public var revocationsPerIP: [RatePolicy]
        /// Status-page logins (`POST /admin/login`) per client address, right token or wrong.
        public var adminLoginsPerIP: [RatePolicy]
        /// `limits.pumping`: per-prefix velocity blocks.
        public var pumping: PrefixVelocity.Settings
        /// `limits.leasing`: slices of busy shared limits held in each herald-api process.
        public var leasing: LimitLeases.Settings

        public init(
            perNumber: [RatePolicy], perIP: [RatePolicy], perProject: [RatePolicy], perCountry: [RatePolicy], perPrefix: [RatePolicy],
            prefixDigits: Int, checksPerNumber: [RatePolicy], pushesPerDevice: [RatePolicy] = [], perEmail: [RatePolicy] = [],
            lookupsPerIP: [RatePolicy] = [], passwordChangesPerUser: [RatePolicy] = [], revocationsPerUser: [RatePolicy] = [],
            revocationsPerIP: [RatePolicy] = [], adminLoginsPerIP: [RatePolicy] = [], pumping: PrefixVelocity.Settings,
            leasing: LimitLeases.Settings = .off
        ) {
            self.adminLoginsPerIP = adminLoginsPerIP
            self.revocationsPerUser = revocationsPerUser
            self.revocationsPerIP = revocationsPerIP
            self.leasing = leasing
            self.perEmail = perEmail
            self.lookupsPerIP = lookupsPerIP
            self.passwordChangesPerUser = passwordChangesPerUser
            self.perNumber = perNumber
            self.perIP = perIP
            self.perProject = perProject
            self.perCountry = perCountry
            self.perPrefix = perPrefix
            self.prefixDigits = prefixDigits
            self.checksPerNumber = checksPerNumber
            self.pushesPerDevice = pushesPerDevice
            self.pumping = pumping
        }
    }

    /// `sms`: provider settings and message texts.
    public struct SMS: Sendable {
        /// `http` (generic gateway) or `console` (prints messages; devMode only).
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

        /// `sms.http`: the generic HTTP gateway.
        public struct HTTPGateway: Sendable {
            public var url: String?
            public var headers: [String: String]
            /// Request body; placeholders `{{to}}`, `{{body}}`, `{{reference}}`, `{{expiresAt}}`.
            public var bodyTemplate: Template
            /// Content-Type of the body; decides how placeholder values are escaped.
            public var contentType: String
            public var timeout: Duration
            /// Provider throughput, shared by every sms worker through the store.
            public var rate: RatePolicy
            /// Key of the HMAC-SHA256 that signs the gateway's delivery receipts
            /// (`POST /callbacks/sms/http`, `ReceiptSignature`); nil turns receipts off.
            public var callbackSecret: Data?
            /// A JSON pointer (RFC 6901, `/id`, `/messages/0/id`) to the provider's message id in the
            /// gateway's 2xx answer; nil when the gateway gives none.
            public var messageIdPath: String?
        }
    }

    /// `email`: who sign-in mails come from, their texts, and the SMTP server herald-email-worker uses.
    public struct Email: Sendable {
        /// `smtp`, or `console` (prints each mail, link included; devMode only).
        public var provider: Provider

        /// Where sign-in mails go.
        public enum Provider: String, Sendable, CaseIterable {
            /// The SMTP relay (`email.smtp`).
            case smtp
            /// The terminal, for development (devMode only).
            case console
        }
        /// Submissions per period across every email worker (protects the relay's own limits).
        public var rate: RatePolicy
        /// `Name <address>`; the address is also the SMTP envelope sender (MAIL FROM, where bounces go).
        public var from: Mailbox
        public var replyTo: Mailbox?
        /// Sender registered with Apple's private email relay; mail to `@privaterelay.appleid.com` must
        /// come from it or Apple drops it. nil = `from`.
        public var privateRelayFrom: Mailbox?
        /// `<dir>/<locale>/signInLink.{subject,txt,html}`.
        public var templateDir: String
        /// Loaded from `templateDir` by `ConfigurationLoader`.
        public var templates: TemplateCatalog
        /// `smtp://host:port` (STARTTLS when offered, required with `requireTLS`) or `smtps://host:port`.
        public var smtpURL: String
        public var smtpUsername: String?
        public var smtpPassword: String?
        /// Refuse to send unless STARTTLS succeeds (never downgrade).
        public var requireTLS: Bool
        /// The EHLO name (libcurl would otherwise send the container's hostname).
        public var heloName: String
        public var timeout: Duration
        /// Extra CA bundle (PEM) for the SMTP server's certificate.
        public var caFile: String?
    }

    /// `push`: how herald-push-worker delivers (`apns`, or `console` in devMode), the provider key and
    /// where to reach APNs.
    public struct Push: Sendable {
        public var provider: Provider

        /// Where silent pushes go.
        public enum Provider: String, Sendable, CaseIterable {
            /// Apple's push service (`push.apns`).
            case apns
            /// The terminal, for development (devMode only).
            case console
        }
        public var apnsURL: String?
        public var caFile: String?
        public var keyId: String?
        public var teamId: String?
        public var keyFile: String?
        public var timeout: Duration
    }

    /// `workers`: one block per worker executable.
    public struct Workers: Sendable {
        public var sms: Worker
        public var email: Worker
        public var push: Worker
        public var apple: Worker

        /// The block of the worker that delivers `type`.
        public func settings(for type: JobType) -> Worker {
            switch type {
            case .sms: sms
            case .email: email
            case .push: push
            case .apple: apple
            }
        }
    }

    /// `workers.<type>`.
    public struct Worker: Sendable {
        /// Jobs processed at once by one process.
        public var concurrency: Int
        /// Unacknowledged deliveries on this worker's consumer (`workers.<type>.prefetch`, else
        /// `amqp.prefetch`). A process works on min(concurrency, prefetch) jobs at once.
        public var prefetch: Int
        /// Delay queues, shortest first; one retry per entry.
        public var retryDelays: [Duration]
        /// Delay queues for throttled jobs (per-number spacing waits longer than `throttleHold`), shortest first.
        public var throttleDelays: [Duration]
        /// Throttle waits up to this long are held in memory (no republish, order kept); longer ones park
        /// the job in a throttle queue. Provider-rate waits are always held (in arrival order).
        public var throttleHold: Duration
        /// Port of `/healthz`, `/readyz`, `/metrics` (0 = any free port).
        public var metricsPort: Int
        /// On SIGTERM, how long in-flight jobs may take before they are handed back to the broker.
        public var shutdownGrace: Duration
        /// Resend when a previous attempt may have reached the provider (risks a duplicate).
        public var retryUncertain: Bool
        /// How often the worker reads its queues' depth and consumers for `/metrics` (zero: never).
        public var queuePollInterval: Duration
    }

    /// The project an API key selects.
    public func project(forAPIKey key: String) -> Project? {
        projects.first { $0.apiKeys.contains(key) }
    }

    /// The project with this id.
    public func project(id: String) -> Project? {
        projects.first { $0.id == id }
    }
}
