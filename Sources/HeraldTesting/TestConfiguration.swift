import Foundation
import HeraldCore
import HeraldRuntime
import Synchronization

/// A complete configuration for one test: its own exchange, state directory and ports, written to a
/// file so real executables can be started with `--config`.
public struct TestConfiguration: Sendable {
    public var exchange = TestBroker.uniqueExchange()
    public var stateDir = NSTemporaryDirectory() + "herald-test-\(UUID().uuidString.prefix(8))"
    /// `tokens.signingKeyFile`: the test process's one key (`TestKeys`), so no herald-api generates its own;
    /// nil to let it generate one in `state.dir`.
    public var signingKeyFile: String? = TestKeys.idTokenSigningKeyFile
    public var apiHost = "127.0.0.1"
    public var apiPort = 0
    public var metricsPort = 0
    public var gatewayURL = "http://127.0.0.1:1/sms"
    public var gatewayTimeout = "5s"
    public var provider = "http"
    public var queueType = "quorum"
    public var prefetch = 32
    public var concurrency = 16
    public var retryDelays = ["300ms", "1s", "2s", "5s"]
    public var throttleDelays = ["100ms", "250ms", "1s", "5s"]
    public var codeTTL = "5m"
    public var maxCheckAttempts = 3
    /// `phone.resendAfter`; zero so tests that send twice get two codes (reentrancy tests set it).
    public var resendAfter = "0s"
    public var phoneEnabled = true
    public var testNumbers: [String: String] = ["+16505553434": "654321"]
    public var sealingKey: String? = Data(SecureRandom.bytes(32)).base64EncodedString()
    public var amqpURL = TestBroker.url
    /// Several nodes (`amqp.url` as a list); overrides `amqpURL` when set.
    public var amqpURLs: [String]? = nil
    /// More keys for `amqp` (YAML flow entries: `tls: {caFile: …}, passwordFile: …`).
    public var amqpExtra = ""
    /// `store.url`; nil = SQLite in the state directory (`TestStore.freshURL()` gives a PostgreSQL one).
    public var storeURL: String? = nil
    /// Longer than production's 5 s: the suite's broker can stall for seconds while its quorum WAL rolls
    /// over, its segment writer then walking hundreds of queues the tests made and deleted (seen: every
    /// in-process API answering 503 for the same few seconds, about 40 failures in one run). Tests of
    /// the timeout itself set their own.
    public var publishTimeout = "15s"
    public var shutdownGrace = "10s"
    public var deliveryLimit = 10
    public var logFormat = "json"
    public var logLevel = "info"
    /// The `limits` section (YAML flow mapping); generous by default so tests measure what they mean to.
    public var limits = "{perNumber: [\"100/1m\"], perIP: [\"1000/1m\"], perProject: [\"10000/1m\"], pumping: {enabled: false}}"
    public var perNumberSpacing = "0s"
    public var providerRate = "1000/1s"
    /// `sms.http.callbackSecret` (base64) and `messageIdPath`; receipts are signed with `callbackSecret`.
    public var callbackSecret: String? = nil
    public var messageIdPath: String? = nil
    /// More of the `sms` section, as YAML lines at its level (`providers:`, `routes: {…}`,
    /// `callbackBaseUrl: …`); with `providers`, `sms.provider` and `sms.http` are not read.
    public var smsExtra: [String] = []
    /// `sms.prices` as YAML flow, e.g. `{US: {perSegment: 0.0079, currency: USD}}`.
    public var smsPrices = "{}"
    /// The `integrations` section (YAML flow), e.g. `{producers: [{id: crm, key: "…", projects: [test-project], types: [sms]}]}`.
    public var integrations = "{}"
    public var trustedProxies: [String] = []
    public var regions = "{allow: [], deny: []}"
    /// The `appVerification` section; off by default so tests of other features need no credential.
    public var appVerification = "{required: false}"
    public var originDomain: String? = nil
    public var androidAppHash: String? = nil
    public var iosBundleIds = ["com.example.herald"]
    /// `projects[].iosApps` of the test project (YAML flow list; empty: none besides iosBundleIds).
    public var iosApps = "[]"
    /// `projects[].androidApps` of the test project.
    public var androidApps = "[]"
    public var apnsURL: String? = nil
    public var apnsCAFile: String? = nil
    public var apnsKey: (id: String, team: String, file: String)? = nil
    /// nil: devMode exactly when a console provider is used.
    public var devMode: Bool? = nil
    public var authorizedDomains = ["localhost", "app.example.com"]
    /// The `emailLink` section of the test project.
    public var emailLink = "{enabled: true, linkTTL: 1h, actionUrl: \"https://auth.example.com/__/auth/action\", enumerationProtection: false}"
    public var mfa = "{phone: enabled}"
    /// `projects[].apple` of the test project (`appleSection(_:)` points it at a `FakeApple`).
    public var apple = "{enabled: false}"
    public var appleRetryDelays = ["300ms", "1s", "2s"]
    /// A production-grade admin token; firebase-admin's emulator token `owner` needs `devMode: true`.
    public var adminTokens = [Self.adminToken]
    /// herald-api's metrics listener (0: any free port).
    public var apiMetricsPort = 0
    public var idleTimeout = "30s"
    /// `http.maxConnections` (nil: derived from the file limit).
    public var maxConnections: Int? = nil
    public var emailProvider = "smtp"
    /// `workers.sms.stuckAfter`: when the status page flags a consumer holding jobs.
    public var stuckAfter = "60s"
    /// `push.provider`: apns by default; `none` for an installation without silent pushes.
    public var pushProvider = "apns"
    public var smtpURL = "smtp://127.0.0.1:1"
    public var smtpTimeout = "5s"
    /// More keys for `email.smtp` (YAML flow entries: `requireTLS: true, caFile: "…", username: u, password: p`).
    public var smtpExtra = ""
    public var emailFrom = "Herald Test <no-reply@herald.test>"
    /// `projects[].password` and `.passwordPolicy` of the test project (YAML flow mappings).
    public var password = "{enabled: true, anonymous: true}"
    public var passwordPolicy = "{}"
    public var privateRelayFrom: String? = nil
    public var emailRetryDelays = ["300ms", "1s", "2s"]

    /// The repository's config/templates/sms, wherever the tests run from.
    public static let templateDir = repositoryRoot.appendingPathComponent("config/templates/sms").path
    /// The repository's config/templates/email.
    public static let emailTemplateDir = repositoryRoot.appendingPathComponent("config/templates/email").path
    /// The checkout the tests were built from.
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public init() {}

    /// A project with every default but its id and denied regions, read as `projects[]` reads one, for
    /// tests of the domain's decisions that take projects.
    public static func project(id: String, denying regions: [String] = []) -> ProjectSettings {
        let yaml = """
            projects:
              - {id: \(id), apiKeys: [key-\(id)], phone: {regions: {deny: [\(regions.joined(separator: ", "))]}}}
            sms: {http: {url: "http://127.0.0.1:1/sms"}, templateDir: "\(templateDir)"}
            """
        return try! ConfigurationLoader.parse(yaml: yaml).projects[0]
    }

    /// The admin token tests send (`Authorization: Bearer …`).
    public static let adminToken = "test-admin-token-0123456789abcdefghijklmnop"
    /// The header that carries it.
    public static let adminHeader = [("Authorization", "Bearer \(adminToken)")]

    /// The project tests use.
    public static let apiKey = "test-api-key"
    public static let projectID = "test-project"
    /// A second project with phone sign-in disabled.
    public static let disabledAPIKey = "disabled-api-key"

    public var yaml: String {
        let numbers = testNumbers.map { "\"\($0.key)\": \"\($0.value)\"" }.joined(separator: ", ")
        return """
            http: {host: "\(apiHost)", port: \(apiPort), metricsPort: \(apiMetricsPort), idleTimeout: \(idleTimeout), maxConnections: \(maxConnections.map(String.init) ?? "null"), trustedProxies: [\(trustedProxies.map { "\"\($0)\"" }.joined(separator: ", "))]}
            state: {dir: "\(stateDir)"}
            amqp: {url: \(amqpURLs.map { "[" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]" } ?? "\"\(amqpURL)\""), exchange: \(exchange), queueType: \(queueType), prefetch: \(prefetch), heartbeat: 10s, deliveryLimit: \(deliveryLimit), publishTimeout: \(publishTimeout), connectTimeout: 2s\(amqpExtra.isEmpty ? "" : ", " + amqpExtra)}
            codes: {sealingKey: \(sealingKey.map { "\"\($0)\"" } ?? "null")}
            store: {url: "\(storeURL ?? "sqlite:\(stateDir)/herald.sqlite")", poolSize: 8}
            devMode: \(devMode ?? (provider == "console" || emailProvider == "console"))
            integrations: \(integrations)
            admin: {tokens: [\(adminTokens.map { "\"\($0)\"" }.joined(separator: ", "))]}
            tokens: {signingKeyFile: \(signingKeyFile.map { "\"\($0)\"" } ?? "null")}
            logging: {level: \(logLevel), format: \(logFormat)}
            projects:
              - id: \(Self.projectID)
                displayName: Herald Test
                apiKeys: [\(Self.apiKey)]
                iosBundleIds: [\(iosBundleIds.joined(separator: ", "))]
                iosApps: \(iosApps)
                androidApps: \(androidApps)
                authorizedDomains: [\(authorizedDomains.joined(separator: ", "))]
                emailLink: \(emailLink)
                password: \(password)
                passwordPolicy: \(passwordPolicy)
                mfa: \(mfa)
                apple: \(apple)
                phone: {enabled: \(phoneEnabled), codeLength: 6, codeTTL: \(codeTTL), resendAfter: \(resendAfter), maxCheckAttempts: \(maxCheckAttempts), testNumbers: {\(numbers)}, regions: \(regions), originDomain: \(originDomain ?? "null"), androidAppHash: \(androidAppHash.map { "\"\($0)\"" } ?? "null")}
                appVerification: \(appVerification)
              - id: disabled-project
                apiKeys: [\(Self.disabledAPIKey)]
                phone: {enabled: false}
                emailLink: {enabled: false}
                mfa: {phone: disabled}
            limits: \(limits)
            sms:
              provider: \(provider)
              perNumberSpacing: \(perNumberSpacing)
              prices: \(smsPrices)
              templateDir: "\(Self.templateDir)"
              http: {url: "\(gatewayURL)", timeout: \(gatewayTimeout), rate: "\(providerRate)", headers: {Authorization: "Bearer gateway-token"}, callbackSecret: \(callbackSecret.map { "\"\($0)\"" } ?? "null"), messageIdPath: \(messageIdPath.map { "\"\($0)\"" } ?? "null")}\(smsExtra.map { "\n  " + $0 }.joined())
            email:
              provider: \(emailProvider)
              from: "\(emailFrom)"
              privateRelayFrom: \(privateRelayFrom.map { "\"\($0)\"" } ?? "null")
              templateDir: "\(Self.emailTemplateDir)"
              smtp: {url: "\(smtpURL)", heloName: herald.test, timeout: \(smtpTimeout)\(smtpExtra.isEmpty ? "" : ", " + smtpExtra)}
            push:
              provider: \(pushProvider)
              apns: {url: \(apnsURL.map { "\"\($0)\"" } ?? "null"), caFile: \(apnsCAFile.map { "\"\($0)\"" } ?? "null"), keyId: \(apnsKey.map { "\"\($0.id)\"" } ?? "null"), teamId: \(apnsKey.map { "\"\($0.team)\"" } ?? "null"), keyFile: \(apnsKey.map { "\"\($0.file)\"" } ?? "null")}
            workers:
              email: {concurrency: 8, retryDelays: [\(emailRetryDelays.joined(separator: ", "))], throttleDelays: [100ms, 1s], metricsPort: 0}
              push: {concurrency: 8, retryDelays: [300ms, 1s], throttleDelays: [100ms], metricsPort: 0}
              apple: {concurrency: 4, retryDelays: [\(appleRetryDelays.joined(separator: ", "))], throttleDelays: [100ms], metricsPort: 0}
              sms: {concurrency: \(concurrency), retryDelays: [\(retryDelays.joined(separator: ", "))], throttleDelays: [\(throttleDelays.joined(separator: ", "))], metricsPort: \(metricsPort), shutdownGrace: \(shutdownGrace), stuckAfter: \(stuckAfter)}
            """
    }

    /// Sign in with Apple against `fake` (its keys, token and revoke URLs, the test CA); with `keyFile`
    /// (where the fake's .p8 key was written) revocation is configured too.
    public static func appleSection(_ fake: FakeApple, clientIds: [String], keyFile: String? = nil) -> String {
        var fields = [
            "enabled: true", "clientIds: [\(clientIds.map { "\"\($0)\"" }.joined(separator: ", "))]", "jwksUrl: \"\(fake.jwksURL)\"",
            "tokenUrl: \"\(fake.tokenURL)\"", "revokeUrl: \"\(fake.revokeURL)\"", "caFile: \"\(TestTLS.shared.caFile)\"",
        ]
        if let keyFile { fields += ["teamId: \"\(fake.teamID)\"", "keyId: \"\(fake.keyID)\"", "keyFile: \"\(keyFile)\""] }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    /// Writes the file into the state directory and returns its path.
    public func write() throws -> String {
        try FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        let path = stateDir + "/herald.yaml"
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The parsed configuration (as the executables would see it).
    public func parsed() throws -> HeraldConfiguration {
        try ConfigurationLoader.parse(yaml: yaml)
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; fine for tests).
public func freePort() -> Int {
    // Ports come from 20000-32767, below the kernel's ephemeral range (32768-60999 here), so no fake server
    // binding port 0 and no outgoing connection can take one between this call and the test's bind; and
    // a port is handed out only once per test process (suites run in parallel).
    while true {
        let port = nextCandidate.withLock { next -> Int in
            defer { next = next >= 32767 ? 20000 : next + 1 }
            return next
        }
        if handedOutPorts.withLock({ $0.contains(port) }) == false, isBindable(port) {
            handedOutPorts.withLock { _ = $0.insert(port) }
            return port
        }
    }
}

private let handedOutPorts = Mutex<Set<Int>>([])
/// Where the search starts: spread over the range by process id, so two test runs rarely meet.
private let nextCandidate = Mutex(20000 + Int(getpid()) % 12000)

/// True when nothing listens on 127.0.0.1:`port` right now.
private func isBindable(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } } == 0
}
