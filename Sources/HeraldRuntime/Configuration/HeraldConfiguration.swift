import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldStore

/// The whole configuration (config/herald.yaml), validated in full at start-up by every executable.
///
/// Each section's type lives beside what it configures: the domain's (projects, limits, codes, tokens,
/// the ledger, workers' delivery policy) in HeraldCore, the adapters' (broker, store, SMS, email, push)
/// in their modules; the process settings every executable shares are nested here. Reading and
/// validating them (`init(reader:)`, one reader per section) is this module's job, so no other module
/// knows the file's shape. config/herald.yaml carries the same documentation for operators.
/// Sections for features that do not exist yet are parsed and validated so a file written today keeps
/// working, and are marked "not yet used" in the file.
public struct HeraldConfiguration: Sendable {
    public var http: HTTP
    public var state: State
    public var amqp: AMQPSettings
    public var store: StoreSettings
    public var codes: CodeSettings
    public var tokens: TokenSettings
    /// Enables dev-only behaviour: the console SMS provider and the emulator endpoints.
    public var devMode: Bool
    public var logging: Logging
    public var admin: Admin
    public var ledger: LedgerSettings
    public var projects: [ProjectSettings]
    public var limits: LimitSettings
    public var sms: SMSSettings
    public var email: EmailSettings
    public var push: PushSettings
    public var workers: Workers
    public var integrations: IntegrationSettings = IntegrationSettings()
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

    /// `workers`: one block per worker executable.
    public struct Workers: Sendable {
        public var sms: WorkerSettings
        public var email: WorkerSettings
        public var push: WorkerSettings
        public var apple: WorkerSettings

        /// The block of the worker that delivers `type`.
        public func settings(for type: JobType) -> WorkerSettings {
            switch type {
            case .sms: sms
            case .email: email
            case .push: push
            case .apple: apple
            }
        }
    }

    /// The project an API key selects.
    public func project(forAPIKey key: String) -> ProjectSettings? {
        projects.first { $0.apiKeys.contains(key) }
    }

    /// The project with this id.
    public func project(id: String) -> ProjectSettings? {
        projects.first { $0.id == id }
    }
}
