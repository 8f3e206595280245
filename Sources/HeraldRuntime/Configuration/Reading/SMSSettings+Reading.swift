import Foundation
import HeraldChannels
import HeraldCore

extension SMSSettings {
    /// `sms`. Whether `console` may be used is the whole file's decision (`devMode`), checked there.
    /// `sms.providers`, when set, replaces `sms.provider` and `sms.http`, which are then not read.
    init(reader sms: ConfigReader) throws {
        let breaker = try CircuitBreaker.Settings(reader: try sms.section("breaker"), defaults: CircuitBreaker.Settings())
        let callbackBaseURL = try Self.baseURL(sms, "callbackBaseUrl")
        let listed = try sms.sectionList("providers") ?? []
        let provider: Provider
        let gateway: HTTPGateway
        var providers: [SMSProviderSettings]
        if listed.isEmpty {
            provider = try sms.choice("provider", default: Provider.http)
            gateway = try HTTPGateway(reader: try sms.section("http"))
            if provider == .http, gateway.url == nil {
                throw sms.fail("http.url", "is required when sms.provider is http")
            }
            providers = [SMSSettings.legacyProvider(provider, http: gateway, breaker: breaker)]
        } else {
            // Marked read, so that a file moving to the list may keep them a while.
            _ = sms.raw("provider")
            _ = sms.raw("http")
            (provider, gateway) = (.http, .unset)
            providers = try listed.map { try SMSProviderSettings(reader: $0, breaker: breaker) }
            var seen: Set<String> = []
            for (index, entry) in providers.enumerated() where seen.insert(entry.name).inserted == false {
                throw ConfigError(key: "sms.providers[\(index)].name", problem: "duplicate provider name '\(entry.name)'")
            }
        }
        self.init(
            provider: provider, http: gateway, templateDir: try sms.string("templateDir", default: "config/templates/sms"),
            templates: TemplateCatalog([:]),
            perNumberSpacing: try sms.duration("perNumberSpacing", default: .seconds(5), in: .zero ... .seconds(3600)),
            prices: try Prices(reader: try sms.section("prices")), providers: listed.isEmpty ? nil : providers,
            routes: try Self.routes(try sms.section("routes"), providers: providers.map(\.name)), callbackBaseURL: callbackBaseURL)
        try sms.finish()
    }

    /// `sms.routes`: each key (`+44`, `GB`, `default`) to a non-empty chain of provider names from
    /// `sms.providers`; without `default`, destinations no key matches use every provider in list order.
    static func routes(_ section: ConfigReader, providers: [String]) throws -> SMSRoutes {
        var routes: [String: [String]] = [:]
        for key in section.keys {
            let chain = try section.stringList(key, default: [])
            guard chain.isEmpty == false else { throw section.fail(key, "must list at least one provider") }
            for (index, name) in chain.enumerated() where providers.contains(name) == false {
                throw ConfigError(
                    key: section.keyPath(key) + "[\(index)]",
                    problem: "no provider named '\(name)' in sms.providers (there are: \(providers.joined(separator: ", ")))")
            }
            guard Set(chain).count == chain.count else { throw section.fail(key, "names a provider twice") }
            routes[key] = chain
        }
        if routes["default"] == nil { routes["default"] = providers }
        do {
            return try SMSRoutes(routes)
        } catch {
            throw section.fail(error.key, "keys are calling-code prefixes such as +44 or +4477, ISO regions such as GB, or default")
        }
    }

    /// An http:// or https:// URL with no query or fragment, its trailing slash dropped; nil when absent.
    static func baseURL(_ section: ConfigReader, _ key: String) throws -> String? {
        guard var url = try section.optionalString(key) else { return nil }
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), url.contains("?") == false, url.contains("#") == false,
            URL(string: url)?.host?.isEmpty == false
        else {
            throw section.fail(key, "must be an http:// or https:// URL without query or fragment (got '\(url)')")
        }
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

extension SMSSettings.HTTPGateway {
    /// `sms.http`.
    init(reader gateway: ConfigReader) throws {
        let url = try gateway.optionalString("url")
        if let url, url.hasPrefix("http://") == false && url.hasPrefix("https://") == false {
            throw gateway.fail("url", "must be an http:// or https:// URL")
        }
        let contentType = try gateway.string("contentType", default: "application/json")
        let bodyText = try gateway.optionalString("bodyTemplate") ?? Self.defaultBody
        let bodyTemplate: Template
        do {
            bodyTemplate = try Template(bodyText, allowed: Self.bodyPlaceholders)
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
        self.init(
            url: url, headers: headers, bodyTemplate: bodyTemplate, contentType: contentType,
            timeout: try gateway.duration("timeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120)),
            rate: try gateway.rate("rate", default: RatePolicy(limit: 100, period: .seconds(1)))!,
            callbackSecret: try gateway.base64Secret("callbackSecret", minimumBytes: 16),
            messageIdPath: try gateway.optionalString("messageIdPath"), errorCodePath: try gateway.optionalString("errorCodePath"))
        if let path = messageIdPath, JSONPointer(path) == nil {
            throw gateway.fail("messageIdPath", "must be a JSON pointer such as /id or /messages/0/id (got \(path))")
        }
        if let path = errorCodePath, JSONPointer(path) == nil {
            throw gateway.fail("errorCodePath", "must be a JSON pointer such as /code or /error/code (got \(path))")
        }
        try gateway.finish()
    }
}

extension SMSSettings.Prices {
    /// `sms.prices`: ISO country codes (or `default`) to `{perSegment, currency}`.
    init(reader section: ConfigReader) throws {
        self.init()
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
            let price = Price(perSegment: perSegment, currency: currency)
            if name == "default" { fallback = price } else { byCountry[name] = price }
        }
    }
}

extension CircuitBreaker.Settings {
    /// `sms.breaker`, or a provider's `breaker` over the `defaults` it inherits.
    init(reader breaker: ConfigReader, defaults: CircuitBreaker.Settings) throws {
        self.init(
            errorRatio: try breaker.double("errorRatio", default: defaults.errorRatio, in: 0.01...1),
            minimumCalls: try breaker.int("minimumCalls", default: defaults.minimumCalls, in: 1...100_000),
            window: try breaker.duration("window", default: defaults.window, in: .seconds(1) ... .seconds(3600)),
            consecutiveFailures: try breaker.int("consecutiveFailures", default: defaults.consecutiveFailures, in: 1...10_000),
            coolDown: try breaker.duration("coolDown", default: defaults.coolDown, in: .seconds(1) ... .seconds(3600)),
            probes: try breaker.int("probes", default: defaults.probes, in: 1...100))
        try breaker.finish()
    }
}

extension SMSProviderSettings {
    /// One entry of `sms.providers`.
    init(reader entry: ConfigReader, breaker defaults: CircuitBreaker.Settings) throws {
        let name = try entry.string("name", default: "")
        guard (1...32).contains(name.count), name.first.map({ $0.isASCII && ($0.isLowercase || $0.isNumber) }) == true,
            name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw entry.fail(
                "name", "is required: 1 to 32 lower-case letters, digits, - or _, such as twilio-us (it appears in callback paths and metrics)")
        }
        guard let typeText = try entry.optionalString("type") else {
            throw entry.fail("type", "is required: one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let kind = Kind(rawValue: typeText) else {
            throw entry.fail("type", "must be one of \(Kind.allCases.map(\.rawValue).joined(separator: ", ")) (got '\(typeText)')")
        }
        let breaker = try CircuitBreaker.Settings(reader: try entry.section("breaker"), defaults: defaults)
        let maxInFlight = try entry.int("maxInFlight", default: 100, in: 1...10_000)
        switch kind {
        case .http:
            // The gateway's own keys (url, headers, bodyTemplate, timeout, rate, …) sit in the entry.
            let gateway = try SMSSettings.HTTPGateway(reader: entry)
            guard gateway.url != nil else { throw entry.fail("url", "is required for a provider of type http") }
            self.init(
                name: name, account: .http(gateway), baseURL: "", rate: gateway.rate, maxInFlight: maxInFlight, timeout: gateway.timeout,
                senders: .init(), breaker: breaker)
            return
        case .console:
            try entry.finish()
            self.init(
                name: name, account: .console, baseURL: "", rate: nil, maxInFlight: maxInFlight, timeout: .seconds(1), senders: .init(),
                breaker: breaker)
            return
        case .twilio, .vonage, .telnyx:
            break
        }
        let baseURL = try SMSSettings.baseURL(entry, "baseUrl") ?? Self.defaultBaseURL(kind)
        let rate = try entry.rate("rate", default: nil)
        let timeout = try entry.duration("timeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120))
        let senders = try Senders(reader: entry)
        let account: Account
        switch kind {
        case .twilio:
            let sid = try Self.required(entry, "accountSid")
            guard sid.hasPrefix("AC"), sid.count == 34, sid.dropFirst(2).allSatisfy(\.isHexDigit) else {
                throw entry.fail("accountSid", "must be a Twilio account SID: AC and 32 hexadecimal digits")
            }
            let keySid = try entry.optionalString("apiKeySid")
            let keySecret = try entry.secret("apiKeySecret")
            guard (keySid == nil) == (keySecret == nil) else {
                throw entry.fail(keySid == nil ? "apiKeySid" : "apiKeySecret", "apiKeySid and apiKeySecret are set together")
            }
            let token = try entry.secret("authToken")
            guard token != nil || keySid != nil else {
                throw entry.fail("authToken", "is required (or apiKeySid and apiKeySecret); it also checks X-Twilio-Signature on receipts")
            }
            let service = try entry.optionalString("messagingServiceSid")
            if let service, service.hasPrefix("MG") == false || service.count != 34 {
                throw entry.fail("messagingServiceSid", "must be a Messaging Service SID: MG and 32 hexadecimal digits")
            }
            guard service != nil || senders.isEmpty == false else {
                throw entry.fail("from", "is required (a sender: from, senders or messagingServiceSid)")
            }
            account = .twilio(
                Twilio(
                    accountSid: sid, authToken: token ?? "", apiKey: keySid.map { ($0, keySecret!) }, messagingServiceSid: service))
        case .vonage:
            let key = try Self.required(entry, "apiKey")
            let secret = try entry.secret("apiSecret")
            let signature = try entry.secret("signatureSecret")
            guard secret != nil || signature != nil else {
                throw entry.fail("apiSecret", "is required (or signatureSecret, which then signs every request)")
            }
            let token = try entry.secret("receiptToken")
            if let token, token.count < 16 || token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) == false {
                throw entry.fail("receiptToken", "must be at least 16 letters, digits, - or _ (for example: openssl rand -hex 16)")
            }
            guard senders.isEmpty == false else { throw entry.fail("from", "is required (a sender: from or senders)") }
            account = .vonage(
                Vonage(
                    apiKey: key, apiSecret: secret, signatureSecret: signature,
                    signatureMethod: try entry.choice("signatureMethod", default: Vonage.SignatureMethod.md5hash), receiptToken: token))
        case .telnyx:
            let key = try entry.secret("apiKey")
            guard let key else { throw entry.fail("apiKey", "is required") }
            let profile = try entry.optionalString("messagingProfileId")
            guard profile != nil || senders.isEmpty == false else {
                throw entry.fail("from", "is required (a sender: from, senders or messagingProfileId)")
            }
            account = .telnyx(Telnyx(apiKey: key, messagingProfileId: profile, publicKey: try entry.base64Key("publicKey", byteCount: 32)))
        case .http, .console:
            preconditionFailure("handled above")
        }
        try entry.finish()
        self.init(
            name: name, account: account, baseURL: baseURL, rate: rate, maxInFlight: maxInFlight, timeout: timeout, senders: senders,
            breaker: breaker)
    }

    private static func required(_ entry: ConfigReader, _ key: String) throws -> String {
        guard let value = try entry.optionalString(key), value.isEmpty == false else { throw entry.fail(key, "is required") }
        return value
    }
}

extension SMSProviderSettings.Senders {
    /// `from` (one sender) or `senders` (`{default: …, GB: …}`), not both.
    init(reader entry: ConfigReader) throws {
        let from = try entry.optionalString("from")
        let map = try entry.stringMap("senders")
        if from != nil, map.isEmpty == false { throw entry.fail("senders", "set either from or senders, not both") }
        var byRegion: [String: String] = [:]
        var fallback = from
        for (key, sender) in map {
            guard key == "default" || (key.count == 2 && key.allSatisfy { $0.isASCII && $0.isUppercase }) else {
                throw ConfigError(key: entry.keyPath("senders") + ".\(key)", problem: "keys are ISO regions such as GB, or default")
            }
            if key == "default" { fallback = sender } else { byRegion[key] = sender }
        }
        for (key, sender) in map.merging(from.map { ["from": $0] } ?? [:], uniquingKeysWith: { a, _ in a })
        where Self.isValid(sender) == false {
            let path = key == "from" ? entry.keyPath("from") : entry.keyPath("senders") + ".\(key)"
            throw ConfigError(key: path, problem: "must be an E.164 number (+15005550006) or an alphanumeric sender of 1 to 11 characters")
        }
        self.init(byRegion: byRegion, fallback: fallback)
    }
}
