import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldStore

extension HeraldConfiguration {
    /// Reads and validates every key, section by section in the file's order; throws `ConfigError`
    /// naming the first bad or unknown key. Checks that span sections (devMode against the bind
    /// address and the console providers, producers against projects) are made here.
    public init(reader root: ConfigReader) throws {
        self.http = try HTTP(reader: try root.section("http"))
        self.state = try State(reader: try root.section("state"))
        self.amqp = try AMQPSettings(reader: try root.section("amqp"))
        self.store = try StoreSettings(reader: try root.section("store"), stateDir: state.dir)
        self.codes = try CodeSettings(reader: try root.section("codes"))
        self.tokens = try TokenSettings(reader: try root.section("tokens"))

        self.devMode = try root.bool("devMode", default: false)
        if devMode, http.isLoopback == false {
            // Dev mode serves live codes and an account wipe without authentication.
            throw root.fail("devMode", "true only with a loopback http.host (127.0.0.1, ::1, localhost); got '\(http.host)'")
        }

        self.logging = try Logging(reader: try root.section("logging"))
        self.admin = try Admin(reader: try root.section("admin"), devMode: devMode)
        self.ledger = try LedgerSettings(reader: try root.section("ledger"))
        self.projects = try Self.projects(root)
        self.limits = try LimitSettings(reader: try root.section("limits"))
        let sms = try root.section("sms")
        self.sms = try SMSSettings(reader: sms)
        self.email = try EmailSettings(reader: try root.section("email"), devMode: devMode)
        self.push = try PushSettings(reader: try root.section("push"), devMode: devMode)
        self.workers = try Workers(reader: try root.section("workers"), prefetch: amqp.prefetch)
        if devMode == false, let index = self.sms.providers.firstIndex(where: { $0.kind == .console }) {
            if self.sms.providersListed {
                throw ConfigError(key: "sms.providers[\(index)].type", problem: "console prints codes to the terminal and needs devMode: true")
            }
            throw sms.fail("provider", "console prints codes to the terminal and needs devMode: true")
        }
        self.integrations = try IntegrationSettings(reader: try root.section("integrations"), projects: projects)
        try root.finish()
    }

    /// `projects`: at least one, ids and API keys unique across them.
    static func projects(_ root: ConfigReader) throws -> [ProjectSettings] {
        guard let readers = try root.sectionList("projects"), readers.isEmpty == false else {
            throw root.fail("projects", "at least one project is required")
        }
        let projects = try readers.map(ProjectSettings.init(reader:))
        var seenIDs: Set<String> = []
        var seenKeys: [String: String] = [:]
        for (index, project) in projects.enumerated() {
            guard seenIDs.insert(project.id).inserted else {
                throw ConfigError(key: "projects[\(index)].id", problem: "duplicate project id '\(project.id)'")
            }
            for key in project.apiKeys {
                if let other = seenKeys[key] {
                    throw ConfigError(key: "projects[\(index)].apiKeys", problem: "an API key is already used by project '\(other)'")
                }
                seenKeys[key] = project.id
            }
        }
        return projects
    }
}

extension HeraldConfiguration.HTTP {
    /// `http`.
    init(reader http: ConfigReader) throws {
        self.init(
            host: try http.string("host", default: "127.0.0.1"),
            port: try http.int("port", default: 9099, in: 0...65535),
            trustedProxies: try http.stringList("trustedProxies", default: []).enumerated().map { index, text in
                guard let network = IPNetwork(text) else {
                    throw ConfigError(key: http.keyPath("trustedProxies") + "[\(index)]", problem: "not an IP address or CIDR block (got '\(text)')")
                }
                return network
            },
            idleTimeout: try http.duration("idleTimeout", default: .seconds(30), in: .seconds(1) ... .seconds(3600)),
            maxConnections: try http.int(
                "maxConnections", default: Self.maxConnections(fileLimit: ProcessLimits.openFiles), in: Self.minimumConnections...1 << 24),
            metricsHost: try http.string("metricsHost", default: "127.0.0.1"),
            metricsPort: try http.int("metricsPort", default: 9100, in: 0...65535))
        try http.finish()
    }
}

extension HeraldConfiguration.State {
    /// `state`.
    init(reader state: ConfigReader) throws {
        self.init(dir: try state.string("dir", default: ".herald"))
        guard dir.isEmpty == false else { throw state.fail("dir", "must not be empty") }
        try state.finish()
    }
}

extension HeraldConfiguration.Logging {
    /// `logging`.
    init(reader logging: ConfigReader) throws {
        self.init(
            level: try logging.choice("level", ["trace", "debug", "info", "notice", "warning", "error", "critical"], default: "info"),
            format: try logging.choice("format", ["json", "text"], default: "json"))
        try logging.finish()
    }
}

extension HeraldConfiguration.Admin {
    /// `admin`: without devMode, every token must be long enough to be a password.
    init(reader admin: ConfigReader, devMode: Bool) throws {
        self.init(tokens: try admin.stringList("tokens", default: []), cookieSecure: try admin.bool("cookieSecure", default: devMode == false))
        if devMode == false {
            // firebase-admin's emulator mode always sends `owner`; anywhere else a token is a password.
            for (index, token) in tokens.enumerated() where token == "owner" || token.count < 32 {
                throw ConfigError(
                    key: admin.keyPath("tokens") + "[\(index)]",
                    problem: token == "owner"
                        ? "'owner' (firebase-admin's emulator token) is accepted only with devMode: true; use a long random token (openssl rand -hex 32)"
                        : "admin tokens must be at least 32 characters without devMode (openssl rand -hex 32)")
            }
        }
        try admin.finish()
    }
}
