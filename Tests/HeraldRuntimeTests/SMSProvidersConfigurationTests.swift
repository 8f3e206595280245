import Foundation
import HeraldChannels
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing

/// `sms.providers`, `sms.routes`, `sms.breaker` and `sms.callbackBaseUrl`: what a file says, and the
/// key each mistake is reported under.
@Suite("Configuration: SMS providers, routes and breakers")
struct SMSProvidersConfigurationTests {
    static let sid = "AC" + String(repeating: "a1", count: 16)

    /// A file whose `sms` section holds `body` (indented under it).
    static func file(_ body: String) -> String {
        """
        projects:
          - id: p1
            apiKeys: [k1]
        sms:
          templateDir: "\(TestConfiguration.templateDir)"
        \(body.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n"))
        """
    }

    static let twilioAndVonage = """
        callbackBaseUrl: https://herald.example.com/
        breaker: {consecutiveFailures: 3, coolDown: 10s}
        providers:
          - name: twilio
            type: twilio
            accountSid: \(sid)
            authToken: token-1
            senders: {default: "+15005550006", GB: Herald}
            rate: 50/1s
            maxInFlight: 20
          - name: vonage-uk
            type: vonage
            apiKey: key
            apiSecret: secret
            signatureSecret: sigsecret
            signatureMethod: sha256
            receiptToken: 0123456789abcdef0123
            from: Herald
            breaker: {coolDown: 60s}
            baseUrl: http://127.0.0.1:9/relay
        routes:
          GB: [vonage-uk, twilio]
          default: [twilio]
        """

    func problem(_ yaml: String, environment: [String: String] = [:]) -> ConfigError? { configProblem(yaml, environment: environment) }

    @Test("a Twilio primary and a Vonage fallback for the UK read as written; sms.http is not required")
    func twilioAndVonage() throws {
        let sms = try ConfigurationLoader.parse(yaml: Self.file(Self.twilioAndVonage)).sms
        #expect(sms.providersListed)
        #expect(sms.providers.map(\.name) == ["twilio", "vonage-uk"])
        #expect(sms.callbackBaseURL == "https://herald.example.com")
        let twilio = sms.providers[0]
        #expect(twilio.kind == .twilio && twilio.baseURL == "https://api.twilio.com")
        #expect(twilio.senders.sender(forRegion: "GB") == "Herald" && twilio.senders.sender(forRegion: "US") == "+15005550006")
        #expect(twilio.rate == RatePolicy.parse("50/1s") && twilio.maxInFlight == 20)
        #expect(twilio.breaker == CircuitBreaker.Settings(consecutiveFailures: 3, coolDown: .seconds(10)))
        guard case .twilio(let account) = twilio.account else { throw TestFailure("not twilio") }
        #expect(account.accountSid == Self.sid && account.authToken == "token-1" && account.apiKey == nil)
        let vonage = sms.providers[1]
        #expect(vonage.baseURL == "http://127.0.0.1:9/relay")
        #expect(vonage.senders == SMSProviderSettings.Senders(fallback: "Herald"))
        #expect(vonage.breaker == CircuitBreaker.Settings(consecutiveFailures: 3, coolDown: .seconds(60)), "inherits sms.breaker")
        guard case .vonage(let keys) = vonage.account else { throw TestFailure("not vonage") }
        #expect(keys.signatureMethod == .sha256 && keys.receiptToken == "0123456789abcdef0123" && keys.apiSecret == "secret")
        #expect(sms.routes.chain(for: "+447700900123", region: "GB") == ["vonage-uk", "twilio"])
        #expect(sms.routes.chain(for: "+15005550006", region: "US") == ["twilio"])
    }

    @Test("without sms.providers, sms.provider and sms.http are the one provider named http, routed everywhere")
    func legacy() throws {
        let sms = try ConfigurationLoader.parse(yaml: Self.file(#"http: {url: "http://127.0.0.1:1/sms", rate: 7/1s}"#)).sms
        #expect(sms.providersListed == false)
        #expect(sms.providers.map(\.name) == ["http"] && sms.providers[0].rate == RatePolicy.parse("7/1s"))
        #expect(sms.routes.chain(for: "+15005550006", region: "US") == ["http"])
    }

    @Test("without routes, or without a default route, a destination goes through every provider in list order")
    func defaultRoute() throws {
        let yaml = Self.file(
            """
            providers:
              - {name: a, type: telnyx, apiKey: k, from: "+15005550006"}
              - {name: b, type: http, url: "https://gw.example.com/sms"}
            routes: {"+44": [b]}
            """)
        let sms = try ConfigurationLoader.parse(yaml: yaml).sms
        #expect(sms.routes.chain(for: "+15005550006", region: "US") == ["a", "b"])
        #expect(sms.routes.chain(for: "+447700900123", region: "GB") == ["b"])
    }

    @Test("secrets come inline or from a …File, never both; the file's first line is the secret")
    func secretFiles() throws {
        let path = NSTemporaryDirectory() + "herald-token-\(UUID().uuidString)"
        try "from-file\nignored\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let yaml = Self.file(
            """
            providers:
              - {name: t, type: twilio, accountSid: \(Self.sid), authTokenFile: "\(path)", from: "+15005550006"}
            """)
        guard case .twilio(let account) = try ConfigurationLoader.parse(yaml: yaml).sms.providers[0].account else {
            throw TestFailure("not twilio")
        }
        #expect(account.authToken == "from-file")
        let both = yaml.replacingOccurrences(of: "authTokenFile", with: "authToken: x, authTokenFile")
        #expect(problem(both)?.key == "sms.providers[0].authTokenFile")
        let missing = yaml.replacingOccurrences(of: path, with: path + ".missing")
        #expect(problem(missing)?.key == "sms.providers[0].authTokenFile")
    }

    @Test(
        "each mistake names its key",
        arguments: [
            ("- {type: twilio}", "sms.providers[0].name"),
            ("- {name: Twilio, type: twilio}", "sms.providers[0].name"),
            ("- {name: t}", "sms.providers[0].type"),
            ("- {name: t, type: plivo}", "sms.providers[0].type"),
            ("- {name: t, type: twilio, accountSid: AC12, authToken: x, from: \"+15005550006\"}", "sms.providers[0].accountSid"),
            ("- {name: t, type: twilio, accountSid: \(sid), from: \"+15005550006\"}", "sms.providers[0].authToken"),
            ("- {name: t, type: twilio, accountSid: \(sid), authToken: x}", "sms.providers[0].from"),
            ("- {name: t, type: twilio, accountSid: \(sid), authToken: x, apiKeySid: SK1, from: \"+15005550006\"}", "sms.providers[0].apiKeySecret"),
            ("- {name: t, type: twilio, accountSid: \(sid), authToken: x, from: \"+1\"}", "sms.providers[0].from"),
            ("- {name: t, type: twilio, accountSid: \(sid), authToken: x, from: Herald, senders: {GB: Herald}}", "sms.providers[0].senders"),
            ("- {name: t, type: twilio, accountSid: \(sid), authToken: x, senders: {UK1: Herald}}", "sms.providers[0].senders.UK1"),
            ("- {name: t, type: vonage, apiKey: k, from: Herald}", "sms.providers[0].apiSecret"),
            ("- {name: t, type: vonage, apiKey: k, apiSecret: s, from: Herald, signatureMethod: sha1}", "sms.providers[0].signatureMethod"),
            ("- {name: t, type: vonage, apiKey: k, apiSecret: s, from: Herald, receiptToken: short}", "sms.providers[0].receiptToken"),
            ("- {name: t, type: telnyx, from: \"+15005550006\"}", "sms.providers[0].apiKey"),
            ("- {name: t, type: telnyx, apiKey: k, from: \"+15005550006\", publicKey: c2hvcnQ=}", "sms.providers[0].publicKey"),
            ("- {name: t, type: telnyx, apiKey: k, from: \"+15005550006\", baseUrl: ftp://x}", "sms.providers[0].baseUrl"),
            ("- {name: t, type: telnyx, apiKey: k, from: \"+15005550006\", maxInFlight: 0}", "sms.providers[0].maxInFlight"),
            ("- {name: t, type: telnyx, apiKey: k, from: \"+15005550006\", breaker: {errorRatio: 2}}", "sms.providers[0].breaker.errorRatio"),
            ("- {name: t, type: telnyx, apiKey: k, from: \"+15005550006\", colour: red}", "sms.providers[0].colour"),
            ("- {name: t, type: http}", "sms.providers[0].url"),
            ("- {name: t, type: console}", "sms.providers[0].type"),
            ("- {name: t, type: http, url: \"https://a\"}\n  - {name: t, type: http, url: \"https://b\"}", "sms.providers[1].name"),
        ])
    func mistakes(_ entry: String, _ key: String) {
        #expect(problem(Self.file("providers:\n  " + entry))?.key == key, "\(entry)")
    }

    @Test("routes name listed providers, once each, under prefix, region or default keys")
    func routeMistakes() {
        let providers = "providers:\n  - {name: a, type: http, url: \"https://a\"}\n"
        #expect(problem(Self.file(providers + "routes: {GB: [b]}"))?.key == "sms.routes.GB[0]")
        #expect(problem(Self.file(providers + "routes: {GB: []}"))?.key == "sms.routes.GB")
        #expect(problem(Self.file(providers + "routes: {GB: [a, a]}"))?.key == "sms.routes.GB")
        #expect(problem(Self.file(providers + "routes: {UK1: [a]}"))?.key == "sms.routes.UK1")
        #expect(problem(Self.file(providers + "callbackBaseUrl: https://h/x?y=1"))?.key == "sms.callbackBaseUrl")
        #expect(problem(Self.file(providers + "breaker: {window: 0s}"))?.key == "sms.breaker.window")
    }
}
