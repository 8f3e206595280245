import Foundation

extension HeraldConfiguration {
    /// Placeholders an SMS text may use.
    public static let smsTextPlaceholders: Set<String> = ["code", "app", "minutes"]
    /// Placeholders a gateway request body may use.
    public static let gatewayBodyPlaceholders: Set<String> = ["to", "body", "reference", "expiresAt", "project"]
    /// Default gateway body: JSON, escaped as JSON strings.
    /// `sms.prices`: ISO country codes (or `default`) to `{perSegment, currency}`.
    static func prices(_ section: ConfigReader) throws -> SMS.Prices {
        var prices = SMS.Prices()
        for name in section.keys {
            guard name == "default" || (name.count == 2 && name.allSatisfy { $0.isASCII && $0.isUppercase }) else {
                throw section.fail(name, "keys are ISO 3166 country codes such as US or DE, or default")
            }
            let entry = try section.section(name)
            let perSegment = try entry.double("perSegment", default: -1, in: -1...1000)
            guard perSegment >= 0 else { throw entry.fail("perSegment", "is required: the price of one segment, such as 0.0079") }
            let currency = try entry.string("currency", default: "")
            guard currency.count == 3, currency.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
                throw entry.fail("currency", "must be an ISO 4217 code such as USD or EUR (got '\(currency)')")
            }
            try entry.finish()
            let price = SMS.Prices.Price(perSegment: perSegment, currency: currency)
            if name == "default" { prices.fallback = price } else { prices.byCountry[name] = price }
        }
        return prices
    }

    public static let defaultGatewayBody = #"{"to":"{{to}}","body":"{{body}}","reference":"{{reference}}"}"#
    /// Message templates every locale directory may hold (`en` must hold all).
    public static let smsTemplateNames = ["verification", "mfa"]
    /// Placeholders an email template may use.
    public static let emailPlaceholders: Set<String> = ["link", "app", "email"]
    /// Email template files per locale (`en` must hold all): `signInLink.subject`, `.txt`, `.html`.
    public static let emailTemplateFiles = EmailMessage.Template.allCases.flatMap { template in
        ["subject", "txt", "html"].map { "\(template.rawValue).\($0)" }
    }

    /// Reads and validates every key; throws `ConfigError` naming the first bad or unknown key.
    public init(reader root: ConfigReader) throws {
        let http = try root.section("http")
        self.http = HTTP(
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
                "maxConnections", default: HTTP.maxConnections(fileLimit: ProcessLimits.openFiles), in: HTTP.minimumConnections...1 << 24),
            metricsHost: try http.string("metricsHost", default: "127.0.0.1"),
            metricsPort: try http.int("metricsPort", default: 9100, in: 0...65535))
        try http.finish()

        let state = try root.section("state")
        self.state = State(dir: try state.string("dir", default: ".herald"))
        guard self.state.dir.isEmpty == false else { throw state.fail("dir", "must not be empty") }
        try state.finish()

        let amqp = try root.section("amqp")
        let urls = try amqp.stringList("url", default: ["amqp://guest:guest@127.0.0.1:5672/%2f"])
        guard urls.isEmpty == false else { throw amqp.fail("url", "needs at least one broker URL") }
        var endpoints: [AMQPEndpoint] = []
        for (index, url) in urls.enumerated() {
            guard let endpoint = AMQPEndpoint(url: url) else {
                throw amqp.fail(
                    urls.count == 1 ? "url" : "url[\(index)]",
                    "must be an amqp://user:password@host:port/vhost or amqps://… URL (without a ?query: heartbeat and TLS are amqp.heartbeat and amqp.tls)"
                )
            }
            endpoints.append(endpoint)
        }
        let amqpTLS = try amqp.section("tls")
        let tls = AMQP.TLS(
            caFile: try amqpTLS.optionalString("caFile"), certFile: try amqpTLS.optionalString("certFile"),
            keyFile: try amqpTLS.optionalString("keyFile"), verifyPeer: try amqpTLS.bool("verifyPeer", default: true))
        guard (tls.certFile == nil) == (tls.keyFile == nil) else {
            throw amqpTLS.fail(tls.certFile == nil ? "certFile" : "keyFile", "a client certificate needs both certFile and keyFile")
        }
        try amqpTLS.finish()
        if endpoints.contains(where: \.tls) == false, tls.caFile != nil || tls.certFile != nil {
            throw amqp.fail("tls", "applies to amqps:// URLs only")
        }
        let exchange = try amqp.string("exchange", default: "herald")
        guard exchange.isEmpty == false, exchange.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            throw amqp.fail("exchange", "must be letters, digits, '.', '_' or '-' (got '\(exchange)')")
        }
        self.amqp = AMQP(
            endpoints: endpoints, tls: tls, passwordFile: try amqp.optionalString("passwordFile"), exchange: exchange,
            queueType: try amqp.choice("queueType", ["quorum", "classic"], default: "quorum"),
            prefetch: try amqp.int("prefetch", default: 32, in: 1...2000),
            heartbeat: try amqp.duration("heartbeat", default: .seconds(30), in: .zero ... .seconds(600)),
            deliveryLimit: try amqp.int("deliveryLimit", default: 10, in: 1...1000),
            publishTimeout: try amqp.duration("publishTimeout", default: .seconds(5), in: .milliseconds(100) ... .seconds(60)),
            connectTimeout: try amqp.duration("connectTimeout", default: .seconds(5), in: .milliseconds(100) ... .seconds(60)),
            managementURL: try amqp.optionalString("managementUrl"))
        if let url = self.amqp.managementURL, url.hasPrefix("http://") == false && url.hasPrefix("https://") == false {
            throw amqp.fail("managementUrl", "must be an http:// or https:// URL such as http://127.0.0.1:15672")
        }
        try amqp.finish()

        let store = try root.section("store")
        let storeURL = try store.string("url", default: "sqlite:\(self.state.dir)/herald.sqlite")
        let location: StoreLocation
        do throws(StoreLocationError) {
            location = try StoreLocation(parsing: storeURL)
        } catch {
            throw store.fail("url", error.description)
        }
        let storeTLS = try store.section("tls")
        let caFile = try storeTLS.optionalString("caFile")
        try storeTLS.finish()
        if case .sqlite = location, caFile != nil {
            throw store.fail("tls", "applies to postgres:// URLs only")
        }
        if case .postgres = location, try store.optionalString("synchronous") != nil {
            throw store.fail("synchronous", "applies to sqlite: URLs only (PostgreSQL's is the server's synchronous_commit)")
        }
        let synchronous = try store.choice("synchronous", SQLiteSynchronous.allCases.map(\.rawValue), default: "full")
        self.store = Store(
            url: storeURL, location: location, poolSize: try store.int("poolSize", default: 16, in: 1...200),
            connectTimeout: try store.duration("connectTimeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120)),
            caFile: caFile, synchronous: SQLiteSynchronous(rawValue: synchronous) ?? .full)
        try store.finish()

        let codes = try root.section("codes")
        self.codes = Codes(sealingKey: try codes.base64Key("sealingKey", byteCount: 32))
        try codes.finish()

        let tokens = try root.section("tokens")
        self.tokens = Tokens(
            signingKeyFile: try tokens.optionalString("signingKeyFile"),
            idTokenTTL: try tokens.duration("idTokenTTL", default: .seconds(3600), in: .seconds(60) ... .seconds(86_400)),
            recentLogin: try tokens.duration("recentLogin", default: .seconds(300), in: .seconds(10) ... .seconds(30 * 86_400)))
        try tokens.finish()

        self.devMode = try root.bool("devMode", default: false)
        if devMode, self.http.isLoopback == false {
            // Dev mode serves live codes and an account wipe without authentication.
            throw root.fail("devMode", "true only with a loopback http.host (127.0.0.1, ::1, localhost); got '\(self.http.host)'")
        }

        let logging = try root.section("logging")
        self.logging = Logging(
            level: try logging.choice(
                "level", ["trace", "debug", "info", "notice", "warning", "error", "critical"], default: "info"),
            format: try logging.choice("format", ["json", "text"], default: "json"))
        try logging.finish()

        let admin = try root.section("admin")
        self.admin = Admin(
            tokens: try admin.stringList("tokens", default: []), cookieSecure: try admin.bool("cookieSecure", default: devMode == false))
        if devMode == false {
            // firebase-admin's emulator mode always sends `owner`; anywhere else a token is a password.
            for (index, token) in self.admin.tokens.enumerated() where token == "owner" || token.count < 32 {
                throw ConfigError(
                    key: admin.keyPath("tokens") + "[\(index)]",
                    problem: token == "owner"
                        ? "'owner' (firebase-admin's emulator token) is accepted only with devMode: true; use a long random token (openssl rand -hex 32)"
                        : "admin tokens must be at least 32 characters without devMode (openssl rand -hex 32)")
            }
        }
        try admin.finish()

        let ledger = try root.section("ledger")
        // At least a day: the worker's ledger row is what stops a redelivered job from being sent twice.
        self.ledger = Ledger(
            retention: try ledger.duration("retention", default: .seconds(30 * 86_400), in: .seconds(86_400) ... .seconds(3650 * 86_400)))
        try ledger.finish()

        guard let projectReaders = try root.sectionList("projects"), projectReaders.isEmpty == false else {
            throw root.fail("projects", "at least one project is required")
        }
        self.projects = try projectReaders.map(Project.init(reader:))
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

        let limits = try root.section("limits")
        self.limits = Limits(
            perNumber: try limits.rateList(
                "perNumber", default: [RatePolicy(limit: 5, period: .seconds(3600)), RatePolicy(limit: 10, period: .seconds(86_400))]),
            perIP: try limits.rateList(
                "perIP", default: [RatePolicy(limit: 50, period: .seconds(60)), RatePolicy(limit: 500, period: .seconds(3600))]),
            perProject: try limits.rateList("perProject", default: [RatePolicy(limit: 1000, period: .seconds(60))]),
            perCountry: try limits.rateList("perCountry", default: []),
            perPrefix: try limits.rateList("perPrefix", default: []),
            prefixDigits: try limits.int("prefixDigits", default: 6, in: 2...14),
            checksPerNumber: try limits.rateList("checksPerNumber", default: [RatePolicy(limit: 20, period: .seconds(3600))]),
            pushesPerDevice: try limits.rateList("pushesPerDevice", default: [RatePolicy(limit: 3, period: .seconds(3600))]),
            perEmail: try limits.rateList(
                "perEmail", default: [RatePolicy(limit: 5, period: .seconds(3600)), RatePolicy(limit: 20, period: .seconds(86_400))]),
            lookupsPerIP: try limits.rateList(
                "lookupsPerIP", default: [RatePolicy(limit: 30, period: .seconds(60)), RatePolicy(limit: 300, period: .seconds(3600))]),
            passwordChangesPerUser: try limits.rateList("passwordChangesPerUser", default: [RatePolicy(limit: 5, period: .seconds(3600))]),
            revocationsPerUser: try limits.rateList("revocationsPerUser", default: [RatePolicy(limit: 5, period: .seconds(3600))]),
            revocationsPerIP: try limits.rateList("revocationsPerIP", default: [RatePolicy(limit: 20, period: .seconds(3600))]),
            adminLoginsPerIP: try limits.rateList("adminLoginsPerIP", default: [RatePolicy(limit: 10, period: .seconds(900))]),
            pumping: try Self.pumping(try limits.section("pumping")),
            leasing: try Self.leasing(try limits.section("leasing")))
        try limits.finish()

        let sms = try root.section("sms")
        let provider = try sms.choice("provider", default: SMS.Provider.http)
        let gateway = try sms.section("http")
        let gatewayURL = try gateway.optionalString("url")
        if let gatewayURL, gatewayURL.hasPrefix("http://") == false && gatewayURL.hasPrefix("https://") == false {
            throw gateway.fail("url", "must be an http:// or https:// URL")
        }
        let contentType = try gateway.string("contentType", default: "application/json")
        let bodyText = try gateway.optionalString("bodyTemplate") ?? Self.defaultGatewayBody
        let bodyTemplate: Template
        do {
            bodyTemplate = try Template(bodyText, allowed: Self.gatewayBodyPlaceholders)
        } catch {
            throw gateway.fail("bodyTemplate", error.problem)
        }
        let headers = try gateway.stringMap("headers")
        for (name, value) in headers {
            // A header name is an RFC 9110 token; CR or LF in either would let the file smuggle headers.
            let tokenCharacters = "!#$%&'*+-.^_`|~"
            guard name.isEmpty == false, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || tokenCharacters.contains($0)) }) else {
                throw ConfigError(key: gateway.keyPath("headers") + ".\(name)", problem: "not a valid HTTP header name")
            }
            // Scalars, not Characters: "\r\n" is one Character and equals neither "\r" nor "\n".
            guard value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) == false else {
                throw ConfigError(key: gateway.keyPath("headers") + ".\(name)", problem: "a header value must not contain CR, LF or NUL")
            }
        }
        let httpGateway = SMS.HTTPGateway(
            url: gatewayURL, headers: headers, bodyTemplate: bodyTemplate,
            contentType: contentType,
            timeout: try gateway.duration("timeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120)),
            rate: try gateway.rate("rate", default: RatePolicy(limit: 100, period: .seconds(1)))!,
            callbackSecret: try gateway.base64Secret("callbackSecret", minimumBytes: 16),
            messageIdPath: try gateway.optionalString("messageIdPath"))
        if let path = httpGateway.messageIdPath, JSONPointer(path) == nil {
            throw gateway.fail("messageIdPath", "must be a JSON pointer such as /id or /messages/0/id (got \(path))")
        }
        try gateway.finish()
        if provider == .http, httpGateway.url == nil {
            throw sms.fail("http.url", "is required when sms.provider is http")
        }
        self.sms = SMS(
            provider: provider, http: httpGateway, templateDir: try sms.string("templateDir", default: "config/templates/sms"),
            templates: TemplateCatalog([:]),
            perNumberSpacing: try sms.duration("perNumberSpacing", default: .seconds(5), in: .zero ... .seconds(3600)),
            prices: try Self.prices(try sms.section("prices")))
        try sms.finish()

        let email = try root.section("email")
        let smtp = try email.section("smtp")
        func mailbox(_ reader: ConfigReader, _ key: String, _ text: String?) throws -> Mailbox? {
            guard let text else { return nil }
            guard let box = Mailbox(parsing: text) else {
                throw reader.fail(key, "not a mailbox ('Name <address@domain>' or 'address@domain'; got '\(text)')")
            }
            return box
        }
        let emailProvider = try email.choice("provider", default: Email.Provider.smtp)
        if emailProvider == .console, devMode == false {
            throw email.fail("provider", "console prints sign-in links to the terminal and needs devMode: true")
        }
        self.email = Email(
            provider: emailProvider,
            rate: try email.rate("rate", default: RatePolicy(limit: 20, period: .seconds(1)))!,
            from: try mailbox(email, "from", try email.string("from", default: "Herald <no-reply@localhost>"))!,
            replyTo: try mailbox(email, "replyTo", try email.optionalString("replyTo")),
            privateRelayFrom: try mailbox(email, "privateRelayFrom", try email.optionalString("privateRelayFrom")),
            templateDir: try email.string("templateDir", default: "config/templates/email"),
            templates: TemplateCatalog([:]),
            smtpURL: try smtp.string("url", default: "smtp://127.0.0.1:1025"),
            smtpUsername: try smtp.optionalString("username"),
            smtpPassword: try smtp.optionalString("password"),
            requireTLS: try smtp.bool("requireTLS", default: false),
            heloName: try smtp.string("heloName", default: "localhost"),
            timeout: try smtp.duration("timeout", default: .seconds(30), in: .seconds(1) ... .seconds(600)),
            caFile: try smtp.optionalString("caFile"))
        guard ["smtp://", "smtps://"].contains(where: self.email.smtpURL.hasPrefix) else {
            throw smtp.fail("url", "must be an smtp:// or smtps:// URL")
        }
        guard self.email.heloName.isEmpty == false,
            self.email.heloName.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
        else {
            throw smtp.fail("heloName", "must be a host name (letters, digits, '-', '.')")
        }
        if (self.email.smtpUsername == nil) != (self.email.smtpPassword == nil) {
            throw smtp.fail(self.email.smtpUsername == nil ? "username" : "password", "username and password go together")
        }
        try smtp.finish()
        try email.finish()

        let push = try root.section("push")
        let apns = try push.section("apns")
        let pushProvider = try push.choice("provider", default: Push.Provider.apns)
        if pushProvider == .console, devMode == false {
            throw push.fail("provider", "console prints push secrets to the terminal and needs devMode: true")
        }
        self.push = Push(
            provider: pushProvider, apnsURL: try apns.optionalString("url"), caFile: try apns.optionalString("caFile"),
            keyId: try apns.optionalString("keyId"), teamId: try apns.optionalString("teamId"),
            keyFile: try apns.optionalString("keyFile"),
            timeout: try apns.duration("timeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120)))
        if let url = self.push.apnsURL, url.hasPrefix("https://") == false {
            throw apns.fail("url", "must be an https:// URL (APNs speaks HTTP/2 over TLS)")
        }
        let keyParts = [self.push.keyId, self.push.teamId, self.push.keyFile]
        if keyParts.contains(where: { $0 != nil }), keyParts.contains(where: { $0 == nil }) {
            throw apns.fail(
                self.push.keyId == nil ? "keyId" : self.push.teamId == nil ? "teamId" : "keyFile", "keyId, teamId and keyFile are set together")
        }
        try apns.finish()
        try push.finish()

        let workers = try root.section("workers")
        let sharedPrefetch = self.amqp.prefetch
        func worker(_ name: String, concurrency: Int, delays: [Duration], port: Int) throws -> Worker {
            let section = try workers.section(name)
            let value = Worker(
                concurrency: try section.int("concurrency", default: concurrency, in: 1...10_000),
                prefetch: try section.int("prefetch", default: sharedPrefetch, in: 1...2000),
                retryDelays: try section.durationList("retryDelays", default: delays, in: .milliseconds(100) ... .seconds(86_400)),
                throttleDelays: try section.durationList(
                    "throttleDelays", default: [.milliseconds(250), .seconds(1), .seconds(5), .seconds(30)],
                    in: .milliseconds(50) ... .seconds(86_400)
                ).sorted(),
                throttleHold: try section.duration("throttleHold", default: .seconds(5), in: .zero ... .seconds(60)),
                metricsPort: try section.int("metricsPort", default: port, in: 0...65535),
                shutdownGrace: try section.duration("shutdownGrace", default: .seconds(25), in: .seconds(1) ... .seconds(600)),
                retryUncertain: try section.bool("retryUncertain", default: false),
                queuePollInterval: try section.duration("queuePollInterval", default: .seconds(15), in: .zero ... .seconds(3600)))
            guard (1...10).contains(value.retryDelays.count) else {
                throw section.fail("retryDelays", "must list between 1 and 10 delays")
            }
            guard (1...10).contains(value.throttleDelays.count) else {
                throw section.fail("throttleDelays", "must list between 1 and 10 delays")
            }
            try section.finish()
            return value
        }
        self.workers = Workers(
            sms: try worker("sms", concurrency: 64, delays: [.seconds(1), .seconds(5), .seconds(30), .seconds(120)], port: 9101),
            email: try worker("email", concurrency: 16, delays: [.seconds(5), .seconds(30), .seconds(120), .seconds(600)], port: 9102),
            push: try worker("push", concurrency: 64, delays: [.seconds(1), .seconds(5), .seconds(30)], port: 9103),
            apple: try worker("apple", concurrency: 8, delays: [.seconds(5), .seconds(30), .seconds(120), .seconds(600)], port: 9104))
        try workers.finish()

        if provider == .console, devMode == false {
            throw sms.fail("provider", "console prints codes to the terminal and needs devMode: true")
        }

        let integrations = try root.section("integrations")
        var producers: [Integrations.Producer] = []
        for reader in try integrations.sectionList("producers") ?? [] {
            let id = try reader.string("id", default: "")
            guard id.isEmpty == false, id.count <= 64,
                id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
            else {
                throw reader.fail("id", "is required: letters, digits, '-', '_' or '.', at most 64 (got '\(id)')")
            }
            guard id != Integrations.heraldAPI else { throw reader.fail("id", "'herald-api' is herald-api's own; pick another id") }
            guard producers.contains(where: { $0.id == id }) == false else { throw reader.fail("id", "duplicate producer id '\(id)'") }
            guard let key = try reader.base64Secret("key", minimumBytes: 32) else {
                throw reader.fail("key", "is required: base64 of at least 32 bytes (openssl rand -base64 32)")
            }
            let projects = try reader.stringList("projects", default: [])
            for project in projects where self.projects.contains(where: { $0.id == project }) == false {
                throw reader.fail("projects", "unknown project '\(project)'")
            }
            guard projects.isEmpty == false else { throw reader.fail("projects", "list the projects this producer may publish for") }
            var types: [JobType] = []
            for name in try reader.stringList("types", default: []) {
                // Email and push jobs carry sealed values (a sign-in link, a push secret) only herald-api can make.
                guard let type = JobType(rawValue: name), type == .sms else {
                    throw reader.fail("types", "'\(name)': foreign producers publish sms jobs (template text) only")
                }
                types.append(type)
            }
            guard types.isEmpty == false else { throw reader.fail("types", "list the job types this producer may publish ([sms])") }
            try reader.finish()
            producers.append(Integrations.Producer(id: id, key: key, projects: projects, types: types))
        }
        self.integrations = Integrations(producers: producers)
        try integrations.finish()
        try root.finish()
    }
}

extension HeraldConfiguration {
    static func leasing(_ section: ConfigReader) throws -> LimitLeases.Settings {
        let settings = LimitLeases.Settings(
            above: try section.int("above", default: 50, in: 0...1_000_000),
            lifetime: try section.duration("lifetime", default: .seconds(1), in: .milliseconds(10) ... .seconds(10)))
        try section.finish()
        return settings
    }

    static func pumping(_ section: ConfigReader) throws -> PrefixVelocity.Settings {
        let settings = PrefixVelocity.Settings(
            enabled: try section.bool("enabled", default: true),
            window: try section.duration("window", default: .seconds(600), in: .seconds(10) ... .seconds(86_400)),
            multiple: try section.double("multiple", default: 10, in: 1...10_000),
            minimumSends: try section.int("minimumSends", default: 50, in: 1...1_000_000),
            blockFor: try section.duration("blockFor", default: .seconds(12 * 3600), in: .seconds(1) ... .seconds(30 * 86_400)))
        try section.finish()
        return settings
    }
}

extension HeraldConfiguration.Project {
    init(reader: ConfigReader) throws {
        let id = try reader.string("id", default: "")
        guard id.isEmpty == false, id.count <= 63, id.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) else {
            throw reader.fail("id", "must be 1-63 lowercase letters, digits or '-' (got '\(id)')")
        }
        self.id = id
        self.displayName = try reader.string("displayName", default: id)
        self.apiKeys = try reader.stringList("apiKeys", default: [])
        guard apiKeys.isEmpty == false, apiKeys.allSatisfy({ $0.isEmpty == false }) else {
            throw reader.fail("apiKeys", "at least one non-empty API key is required")
        }
        self.authorizedDomains = try reader.stringList("authorizedDomains", default: ["localhost"])
        var apps: [IOSApp] = []
        for app in try reader.sectionList("iosApps") ?? [] {
            let bundleId = try app.string("bundleId", default: "")
            guard bundleId.isEmpty == false else { throw app.fail("bundleId", "is required") }
            let teamId = try app.optionalString("teamId")
            if let teamId, teamId.count != 10 || teamId.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) == false {
                throw app.fail("teamId", "an Apple team id is 10 upper-case letters and digits")
            }
            let reversed = try app.optionalString("reversedClientId")
            if let reversed, reversed.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.".contains($0)) }) == false {
                throw app.fail("reversedClientId", "is a URL scheme such as com.googleusercontent.apps.123-abc")
            }
            apps.append(IOSApp(bundleId: bundleId, teamId: teamId, reversedClientId: reversed, appId: try app.optionalString("appId")))
            try app.finish()
        }
        let shorthand = try reader.stringList("iosBundleIds", default: [])
        for bundleId in shorthand where apps.contains(where: { $0.bundleId == bundleId }) == false { apps.append(IOSApp(bundleId: bundleId)) }
        self.iosApps = apps
        self.iosBundleIds = apps.map(\.bundleId)
        var androidApps: [AndroidApp] = []
        for app in try reader.sectionList("androidApps") ?? [] {
            let packageName = try app.string("packageName", default: "")
            guard packageName.isEmpty == false else { throw app.fail("packageName", "is required") }
            let fingerprints = try app.stringList("sha256CertFingerprints", default: [])
            for fingerprint in fingerprints {
                let hex = fingerprint.split(separator: ":")
                guard hex.count == 32, hex.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else {
                    throw app.fail("sha256CertFingerprints", "'\(fingerprint)' is not a SHA-256 fingerprint (32 hex pairs separated by ':')")
                }
            }
            androidApps.append(AndroidApp(packageName: packageName, sha256CertFingerprints: fingerprints.map { $0.uppercased() }))
            try app.finish()
        }
        self.androidApps = androidApps

        let phone = try reader.section("phone")
        let codeLength = try phone.int("codeLength", default: 6, in: 4...10)
        var testNumbers: [String: String] = [:]
        let allowReal = try phone.bool("testNumbersAllowReal", default: false)
        for (number, code) in try phone.stringMap("testNumbers") {
            let key = phone.keyPath("testNumbers") + ".\(number)"
            guard let parsed = try? PhoneNumber(parsing: number) else {
                throw ConfigError(key: key, problem: "not a valid E.164 phone number")
            }
            guard OneTimeCode.isWellFormed(code, length: codeLength) else {
                throw ConfigError(key: key, problem: "the code must be exactly \(codeLength) digits (phone.codeLength)")
            }
            // A fixed code on a real number is a standing login into whoever owns it.
            guard allowReal || FictionalNumbers.contains(parsed.e164) else {
                throw ConfigError(
                    key: key,
                    problem:
                        "not a fictional number (NANP 555 exchange, Ofcom or ACMA drama ranges; README); set phone.testNumbersAllowReal: true to list a real one"
                )
            }
            testNumbers[parsed.e164] = code
        }
        guard testNumbers.count <= 10 else { throw phone.fail("testNumbers", "at most 10 test numbers are allowed") }
        let regions = try phone.section("regions")
        let allow = try regions.stringList("allow", default: [])
        let deny = try regions.stringList("deny", default: [])
        for (name, list) in [("allow", allow), ("deny", deny)] {
            if let bad = list.first(where: { $0.count != 2 || $0.allSatisfy({ $0.isASCII && $0.isUppercase }) == false }) {
                throw regions.fail(name, "regions are ISO 3166 two-letter codes such as US or DE (got '\(bad)')")
            }
        }
        guard allow.isEmpty || deny.isEmpty else {
            throw regions.fail("allow", "set either an allow-list or a deny-list, not both")
        }
        try regions.finish()
        self.phone = Phone(
            enabled: try phone.bool("enabled", default: true), codeLength: codeLength,
            codeTTL: try phone.duration("codeTTL", default: .seconds(300), in: .seconds(10) ... .seconds(86_400)),
            maxCheckAttempts: try phone.int("maxCheckAttempts", default: 5, in: 1...100),
            resendAfter: try phone.duration("resendAfter", default: .seconds(30), in: .zero ... .seconds(3600)),
            testNumbers: testNumbers, testNumbersAllowReal: allowReal, regions: Regions(allow: allow, deny: deny),
            originDomain: try phone.optionalString("originDomain"), androidAppHash: try phone.optionalString("androidAppHash"))
        if let domain = self.phone.originDomain,
            domain.isEmpty || domain.contains(where: { $0 == " " || $0 == "@" || $0 == "#" || $0 == "/" })
        {
            throw phone.fail("originDomain", "must be a bare host name such as example.com")
        }
        if let hash = self.phone.androidAppHash,
            hash.count != 11 || hash.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") }) == false
        {
            throw phone.fail("androidAppHash", "must be the 11-character SMS Retriever hash of the app")
        }
        try phone.finish()

        let emailLink = try reader.section("emailLink")
        self.emailLink = EmailLink(
            enabled: try emailLink.bool("enabled", default: true),
            linkTTL: try emailLink.duration("linkTTL", default: .seconds(6 * 3600), in: .seconds(60) ... .seconds(7 * 86_400)),
            actionUrl: try emailLink.string("actionUrl", default: "http://localhost:9099/__/auth/action"),
            enumerationProtection: try emailLink.bool("enumerationProtection", default: true),
            appSchemes: try emailLink.stringList("appSchemes", default: []).map { $0.lowercased() })
        guard ["http://", "https://"].contains(where: self.emailLink.actionUrl.lowercased().hasPrefix),
            URL(string: self.emailLink.actionUrl)?.host != nil
        else {
            throw emailLink.fail("actionUrl", "must be an http:// or https:// URL")
        }
        for (index, scheme) in self.emailLink.appSchemes.enumerated() {
            let allowed = scheme.first?.isLetter == true && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
            guard allowed, ContinueURL.webSchemes.contains(scheme) == false, ContinueURL.forbiddenSchemes.contains(scheme) == false else {
                throw ConfigError(
                    key: emailLink.keyPath("appSchemes") + "[\(index)]",
                    problem: "must be an app's own URL scheme such as com.example.app (got '\(scheme)')")
            }
        }
        self.emailLink.linkDomains = try emailLink.stringList("linkDomains", default: [])
        for (index, host) in self.emailLink.linkDomains.enumerated() {
            let valid =
                host.isEmpty == false && host.utf8.count <= 253
                && host.utf8.allSatisfy {
                    ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                        || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                }
                && host.hasPrefix(".") == false && host.hasSuffix(".") == false && host.contains("..") == false
            guard valid else {
                throw ConfigError(
                    key: emailLink.keyPath("linkDomains") + "[\(index)]",
                    problem: "must be a host name in lowercase ASCII such as links.example.com (got '\(host)')")
            }
        }
        try emailLink.finish()

        let apple = try reader.section("apple")
        self.apple = Apple(
            enabled: try apple.bool("enabled", default: false),
            clientIds: try apple.stringList("clientIds", default: []),
            jwksUrl: try apple.string("jwksUrl", default: "https://appleid.apple.com/auth/keys"),
            tokenUrl: try apple.string("tokenUrl", default: "https://appleid.apple.com/auth/token"),
            revokeUrl: try apple.string("revokeUrl", default: "https://appleid.apple.com/auth/revoke"),
            caFile: try apple.optionalString("caFile"), teamId: try apple.optionalString("teamId"),
            keyId: try apple.optionalString("keyId"), keyFile: try apple.optionalString("keyFile"))
        for (key, url) in [("jwksUrl", self.apple.jwksUrl), ("tokenUrl", self.apple.tokenUrl), ("revokeUrl", self.apple.revokeUrl)] {
            guard url.lowercased().hasPrefix("https://"), URL(string: url)?.host != nil else {
                throw apple.fail(key, "must be an https:// URL")
            }
        }
        if self.apple.enabled, self.apple.clientIds.isEmpty {
            throw apple.fail("clientIds", "list the app's bundle id (and any Services id) when Sign in with Apple is enabled")
        }
        let appleKey = [self.apple.teamId, self.apple.keyId, self.apple.keyFile]
        if appleKey.contains(where: { $0 != nil }), appleKey.contains(where: { $0 == nil }) {
            throw apple.fail(
                self.apple.teamId == nil ? "teamId" : self.apple.keyId == nil ? "keyId" : "keyFile", "teamId, keyId and keyFile are set together")
        }
        try apple.finish()

        let mfa = try reader.section("mfa")
        self.mfa = MFA(phone: try mfa.choice("phone", ["enabled", "disabled"], default: "enabled"))
        try mfa.finish()

        let verification = try reader.section("appVerification")
        let captcha = try verification.section("captcha")
        self.appVerification = AppVerification(
            required: try verification.bool("required", default: true),
            disabledForTesting: try verification.bool("disabledForTesting", default: false),
            receiptTTL: try verification.duration("receiptTTL", default: .seconds(3600), in: .seconds(60) ... .seconds(86_400)),
            pushTTL: try verification.duration("pushTTL", default: .seconds(300), in: .seconds(10) ... .seconds(3600)),
            suggestedTimeout: try verification.duration("suggestedTimeout", default: .seconds(5), in: .seconds(1) ... .seconds(60)),
            captchaVerifyUrl: try captcha.optionalString("verifyUrl"),
            captchaSecret: try captcha.optionalString("secret"),
            captchaMinScore: try captcha.double("minScore", default: 0.5, in: 0...1),
            captchaSiteKey: try captcha.optionalString("siteKey"),
            // Without a widget script the site key is what it always was: reCAPTCHA Enterprise.
            captchaWidget: AppVerification.CaptchaWidget(
                rawValue: try captcha.choice(
                    "widget", AppVerification.CaptchaWidget.allCases.map(\.rawValue),
                    default: try captcha.optionalString("widgetScriptUrl") == nil ? "recaptchaEnterprise" : "recaptcha"))!,
            captchaWidgetScriptUrl: try captcha.optionalString("widgetScriptUrl"))
        if let url = self.appVerification.captchaWidgetScriptUrl {
            guard url.hasPrefix("https://") || url.hasPrefix("http://"), URL(string: url)?.host != nil else {
                throw captcha.fail("widgetScriptUrl", "must be an http(s):// URL")
            }
            guard self.appVerification.captchaSiteKey != nil else { throw captcha.fail("siteKey", "is required with widgetScriptUrl") }
        }
        if let url = self.appVerification.captchaVerifyUrl {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else { throw captcha.fail("verifyUrl", "must be an http(s):// URL") }
            guard self.appVerification.captchaSecret != nil else { throw captcha.fail("secret", "is required with verifyUrl") }
        }
        try captcha.finish()
        try verification.finish()
        try reader.finish()
    }
}
