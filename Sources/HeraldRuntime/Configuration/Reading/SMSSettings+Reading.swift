import HeraldChannels
import HeraldCore

extension SMSSettings {
    /// `sms`. Whether `console` may be used is the whole file's decision (`devMode`), checked there.
    init(reader sms: ConfigReader) throws {
        let provider = try sms.choice("provider", default: Provider.http)
        let gateway = try HTTPGateway(reader: try sms.section("http"))
        if provider == .http, gateway.url == nil {
            throw sms.fail("http.url", "is required when sms.provider is http")
        }
        self.init(
            provider: provider, http: gateway, templateDir: try sms.string("templateDir", default: "config/templates/sms"),
            templates: TemplateCatalog([:]),
            perNumberSpacing: try sms.duration("perNumberSpacing", default: .seconds(5), in: .zero ... .seconds(3600)),
            prices: try Prices(reader: try sms.section("prices")))
        try sms.finish()
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
