import Foundation
import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Testing

@Suite("Configuration loading and validation")
struct ConfigurationTests {
    static let minimal = """
        projects:
          - id: p1
            apiKeys: [k1]
        sms:
          http: {url: "http://127.0.0.1:1/sms"}
          templateDir: "\(TestConfiguration.templateDir)"
        """

    func problem(_ yaml: String, environment: [String: String] = [:]) -> ConfigError? { configProblem(yaml, environment: environment) }

    @Test("the shipped config/herald.yaml is valid and says what the architecture promises")
    func shippedFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let (configuration, _) = try ConfigurationLoader.load(path: root.appendingPathComponent("config/herald.yaml").path, environment: [:])
        #expect(configuration.http.port == 9099)
        #expect(configuration.devMode)
        #expect(configuration.sms.provider == .console)
        #expect(configuration.state.dir == ".herald")
        #expect(configuration.store.url == "sqlite:.herald/herald.sqlite")
        #expect(configuration.amqp.queueType == "quorum")
        #expect(configuration.workers.sms.retryDelays == [.seconds(1), .seconds(5), .seconds(30), .seconds(120)])
        #expect(configuration.limits.perNumber == [RatePolicy.parse("5/1h")!, RatePolicy.parse("10/1d")!])
        #expect(configuration.limits.perIP == [RatePolicy.parse("50/1m")!, RatePolicy.parse("500/1h")!])
        #expect(configuration.limits.perProject == [RatePolicy.parse("1000/1m")!])
        #expect(configuration.limits.pumping.enabled)
        #expect(configuration.limits.pumping.blockFor == .seconds(12 * 3600))
        #expect(configuration.limits.leasing == LimitLeases.Settings(above: 50, lifetime: .seconds(1)))
        #expect(configuration.sms.perNumberSpacing == .seconds(5))
        #expect(configuration.sms.http.rate == RatePolicy.parse("100/1s"))
        #expect(configuration.workers.sms.throttleDelays == [.milliseconds(250), .seconds(1), .seconds(5), .seconds(30)])
        let project = try #require(configuration.project(forAPIKey: "demo-api-key"))
        #expect(project.phone.testNumbers == ["+16505553434": "654321"])
        #expect(project.phone.codeTTL == .seconds(300))
    }

    @Test("workers.<type>.prefetch defaults to amqp.prefetch and overrides it per worker type, within 1…2000")
    func workerPrefetch() throws {
        let shared = try ConfigurationLoader.parse(yaml: Self.minimal + "\namqp: {prefetch: 40}")
        let prefetches: [Int] = [shared.workers.sms.prefetch, shared.workers.email.prefetch, shared.workers.push.prefetch]
        #expect(prefetches == [40, 40, 40])
        let own = try ConfigurationLoader.parse(yaml: Self.minimal, environment: ["HERALD_WORKERS_SMS_PREFETCH": "128"])
        #expect(own.workers.sms.prefetch == 128)
        #expect(own.workers.email.prefetch == 32)
        let refused = problem(Self.minimal + "\nworkers: {sms: {prefetch: 0}}")
        #expect(refused?.key == "workers.sms.prefetch")
    }

    @Test("ledger.retention keeps messages 30 days by default, takes a duration of at least a day")
    func ledgerRetention() throws {
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).ledger.retention == .seconds(30 * 86_400))
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal + "\nledger: {retention: 7d}").ledger.retention == .seconds(7 * 86_400))
        #expect(problem(Self.minimal + "\nledger: {retention: 12h}")?.key == "ledger.retention")
        #expect(problem(Self.minimal + "\nledger: {retain: 7d}")?.key == "ledger.retain")
    }

    @Test("sms.http.callbackSecret is base64 of 16 bytes or more; messageIdPath a JSON pointer that finds strings and numbers")
    func receiptSettings() throws {
        let secret = Data(repeating: 7, count: 32).base64EncodedString()
        func gateway(_ extra: String) -> String {
            Self.minimal.replacingOccurrences(
                of: #"http: {url: "http://127.0.0.1:1/sms"}"#, with: #"http: {url: "http://127.0.0.1:1/sms", "# + extra + "}")
        }
        let configured = try ConfigurationLoader.parse(yaml: gateway("callbackSecret: \"\(secret)\", messageIdPath: /data/0/id"))
        #expect(configured.sms.http.callbackSecret == Data(repeating: 7, count: 32))
        #expect(configured.sms.http.messageIdPath == "/data/0/id")
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).sms.http.callbackSecret == nil)
        #expect(problem(gateway("callbackSecret: c2hvcnQ="))?.key == "sms.http.callbackSecret")
        #expect(problem(gateway("messageIdPath: id"))?.key == "sms.http.messageIdPath")
        let pointer = try #require(JSONPointer("/data/0/id"))
        #expect(pointer.text(in: Data(#"{"data":[{"id":"SM1"}]}"#.utf8)) == "SM1")
        #expect(pointer.text(in: Data(#"{"data":[{"id":42}]}"#.utf8)) == "42")
        #expect(pointer.text(in: Data(#"{"data":[{"id":{"x":1}}]}"#.utf8)) == nil)
        #expect(pointer.text(in: Data(#"{"data":[]}"#.utf8)) == nil)
        #expect(pointer.text(in: Data("not json".utf8)) == nil)
        #expect(JSONPointer("/a~1b/c~0d")?.tokens == ["a/b", "c~d"])
    }

    @Test("sms.http.errorCodePath is a JSON pointer")
    func errorCodePath() throws {
        func gateway(_ extra: String) -> String {
            Self.minimal.replacingOccurrences(
                of: #"http: {url: "http://127.0.0.1:1/sms"}"#, with: #"http: {url: "http://127.0.0.1:1/sms", "# + extra + "}")
        }
        #expect(try ConfigurationLoader.parse(yaml: gateway("errorCodePath: /error/code")).sms.http.errorCodePath == "/error/code")
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).sms.http.errorCodePath == nil)
        #expect(problem(gateway("errorCodePath: code"))?.key == "sms.http.errorCodePath")
    }

    @Test("sms.prices: per country and a default, ISO codes only, perSegment and a currency required")
    func smsPrices() throws {
        func prices(_ flow: String) -> String {
            Self.minimal.replacingOccurrences(of: "  templateDir:", with: "  prices: \(flow)\n  templateDir:")
        }
        let configured = try ConfigurationLoader.parse(
            yaml: prices("{US: {perSegment: 0.0079, currency: USD}, default: {perSegment: 0.05, currency: EUR}}"))
        #expect(configured.sms.prices.price(for: "US") == .init(perSegment: 0.0079, currency: "USD"))
        #expect(configured.sms.prices.price(for: "DE") == .init(perSegment: 0.05, currency: "EUR"))
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).sms.prices.price(for: "US") == nil)
        #expect(problem(prices("{usa: {perSegment: 1, currency: USD}}"))?.key == "sms.prices.usa")
        #expect(problem(prices("{US: {currency: USD}}"))?.key == "sms.prices.US.perSegment")
        #expect(problem(prices("{US: {perSegment: 1, currency: dollars}}"))?.key == "sms.prices.US.currency")
        #expect(problem(prices("{US: {perSegment: 1, currency: USD, per: 2}}"))?.key == "sms.prices.US.per")
    }

    @Test("defaults fill everything a minimal file leaves out")
    func defaults() throws {
        let configuration = try ConfigurationLoader.parse(yaml: Self.minimal)
        #expect(configuration.amqp.exchange == "herald")
        #expect(configuration.amqp.prefetch == 32)
        #expect(configuration.projects[0].phone.codeLength == 6)
        #expect(configuration.projects[0].displayName == "p1")
        #expect(configuration.devMode == false)
        #expect(configuration.sms.templates.template("verification", locale: "de-AT")?.locale == "de")
    }

    @Test("store.url: sqlite paths and postgres URLs with percent-encoded credentials, sslmode and schema; bad ones are named")
    func storeURLs() throws {
        let postgres = try ConfigurationLoader.parse(
            yaml: Self.minimal
                + "\nstore: {url: \"postgres://herald:p%40ss%2Fword@db.example.net:6432/herald?sslmode=verify-full&schema=eu1\", poolSize: 32, tls: {caFile: /etc/herald/db-ca.pem}}\n"
        )
        guard case .postgres(let location) = postgres.store.location else {
            Issue.record("not parsed as PostgreSQL")
            return
        }
        #expect(location.host == "db.example.net")
        #expect(location.port == 6432)
        #expect(location.user == "herald")
        #expect(location.password == "p@ss/word")
        #expect(location.database == "herald")
        #expect(location.sslMode == .verifyFull)
        #expect(location.schema == "eu1")
        #expect(postgres.store.poolSize == 32)
        #expect(postgres.store.caFile == "/etc/herald/db-ca.pem")
        #expect(location.redacted == "postgres://herald:***@db.example.net:6432/herald?sslmode=verify-full&schema=eu1")
        #expect(postgres.store.location.redacted.contains("p%40ss") == false)

        let defaults = try StoreLocation(parsing: "postgresql://h@[::1]/db")
        #expect(defaults == .postgres(.init(host: "::1", port: 5432, user: "h", password: nil, database: "db", sslMode: .prefer, schema: nil)))
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).store.location == .sqlite(path: ".herald/herald.sqlite"))

        for (url, says) in [
            ("postgres://db.example.net/herald", "needs a user"),
            ("postgres://u:p@db.example.net", "needs a database"),
            ("postgres://u:p@db.example.net/herald?sslmode=maybe", "sslmode must be one of"),
            ("postgres://u:p@db.example.net/herald?schema=Drop;Table", "schema must be"),
            ("postgres://u:p@db.example.net/herald?timeout=5", "does not know the parameter 'timeout'"),
            ("mysql://u:p@db/herald", "must be sqlite:<path> or postgres://"),
            ("sqlite:", "needs a path"),
        ] {
            let error = problem(Self.minimal + "\nstore: {url: \"\(url)\"}\n")
            #expect(error?.key == "store.url", "\(url)")
            #expect(error?.problem.contains(says) == true, "\(url): \(error?.problem ?? "accepted")")
            #expect(error?.problem.contains(":p@") != true, "\(url): the password is repeated")
        }
        #expect(problem(Self.minimal + "\nstore: {tls: {caFile: /x.pem}}\n")?.key == "store.tls")
        // A broken file is located, never quoted: Yams's own message would carry every password in it.
        let broken = problem(Self.minimal + "\nstore:\n  url: \"postgres://u:s3cret@db/herald\"\n  url: x\n")
        #expect(broken?.problem.contains("duplicate key(s) url at line") == true, "\(broken?.problem ?? "accepted")")
        #expect(broken?.problem.contains("s3cret") == false)
        let unparsable = problem(Self.minimal + "\nstore: {url: \"postgres://u:s3cret@db/herald\"\nbad: [\n")
        #expect(unparsable?.problem.contains("line") == true)
        #expect(unparsable?.problem.contains("s3cret") == false)
        #expect(problem(Self.minimal + "\nstore: {poolSize: 0}\n")?.key == "store.poolSize")
    }

    @Test("store.synchronous: SQLite commits reach the disk unless set to normal; only for sqlite: URLs")
    func sqliteSynchronous() throws {
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).store.synchronous == .full)
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal + "\nstore: {synchronous: normal}\n").store.synchronous == .normal)
        let fromEnvironment = try ConfigurationLoader.parse(yaml: Self.minimal, environment: ["HERALD_STORE_SYNCHRONOUS": "normal"])
        #expect(fromEnvironment.store.synchronous == .normal)
        let unknown = problem(Self.minimal + "\nstore: {synchronous: off}\n")
        #expect(unknown?.key == "store.synchronous")
        #expect(unknown?.problem.contains("must be one of full, normal") == true, "\(unknown?.problem ?? "accepted")")
        let postgres = problem(Self.minimal + "\nstore: {url: \"postgres://u@db/herald\", synchronous: full}\n")
        #expect(postgres?.key == "store.synchronous")
        #expect(postgres?.problem.contains("synchronous_commit") == true, "\(postgres?.problem ?? "accepted")")
    }

    @Test("amqp.url: one URL or a list of nodes, amqp:// or amqps:// (port 5671); amqp.tls and amqp.passwordFile")
    func brokerURLs() throws {
        let nodes = try ConfigurationLoader.parse(
            yaml: Self.minimal
                + "\namqp: {url: [\"amqps://herald:x@mq-1.example.net/prod\", \"amqps://herald:x@mq-2.example.net:5999/prod\"], tls: {caFile: /etc/herald/mq-ca.pem}}\n"
        )
        #expect(nodes.amqp.endpoints.map(\.host) == ["mq-1.example.net", "mq-2.example.net"])
        #expect(nodes.amqp.endpoints.map(\.port) == [5671, 5999])
        #expect(nodes.amqp.endpoints.allSatisfy { $0.tls && $0.virtualHost == "prod" })
        #expect(nodes.amqp.tls == .init(caFile: "/etc/herald/mq-ca.pem", verifyPeer: true))
        #expect(nodes.amqp.endpoints[0].redacted == "amqps://herald:***@mq-1.example.net:5671/prod")
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).amqp.endpoints.map(\.port) == [5672])

        let directory = NSTemporaryDirectory() + "herald-secret-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "s3cret\n".write(toFile: directory + "/amqp", atomically: true, encoding: .utf8)
        let withFile = try ConfigurationLoader.parse(
            yaml: Self.minimal + "\namqp: {url: [\"amqp://herald@a/%2f\", \"amqp://herald@b/%2f\"], passwordFile: \"\(directory)/amqp\"}\n")
        #expect(withFile.amqp.endpoints.map(\.password) == ["s3cret", "s3cret"])
        #expect(problem(Self.minimal + "\namqp: {passwordFile: \"\(directory)/missing\"}\n")?.key == "amqp.passwordFile")

        #expect(problem(Self.minimal + "\namqp: {url: [\"amqp://a/%2f\", \"http://b\"]}\n")?.key == "amqp.url[1]")
        #expect(problem(Self.minimal + "\namqp: {url: []}\n")?.key == "amqp.url")
        #expect(problem(Self.minimal + "\namqp: {tls: {caFile: /ca.pem}}\n")?.key == "amqp.tls")
        #expect(problem(Self.minimal + "\namqp: {url: \"amqps://a/%2f\", tls: {certFile: /c.pem}}\n")?.key == "amqp.tls.keyFile")
        #expect(problem(Self.minimal + "\namqp: {url: \"amqps://a/%2f\", tls: {verifyPeer: maybe}}\n")?.key == "amqp.tls.verifyPeer")
    }

    @Test("an unknown key stops start-up naming the key and suggesting the right one")
    func unknownKey() {
        let error = problem(Self.minimal + "\n  htp: {timeout: 5s}\n")
        #expect(error?.key == "sms.htp")
        #expect(error?.problem.contains("did you mean 'sms.http'") == true)
        #expect(
            problem("projects:\n  - id: p1\n    apiKeys: [k]\n    phone: {codeTTl: 5m}\nsms: {provider: console}\ndevMode: true")?.key
                == "projects[0].phone.codeTTl")
        #expect(problem(Self.minimal + "\nbogus: 1\n")?.key == "bogus")
    }

    @Test(
        "bad values name their key",
        arguments: [
            ("amqp: {heartbeat: 30}", "amqp.heartbeat"),
            ("amqp: {prefetch: lots}", "amqp.prefetch"),
            ("amqp: {queueType: stream}", "amqp.queueType"),
            ("amqp: {url: \"http://x\"}", "amqp.url"),
            ("codes: {sealingKey: \"c2hvcnQ=\"}", "codes.sealingKey"),
            ("limits: {perIP: [\"50 per minute\"]}", "limits.perIP[0]"),
            ("workers: {sms: {retryDelays: [1s, soon]}}", "workers.sms.retryDelays[1]"),
            ("logging: {level: loud}", "logging.level"),
            ("store: {url: \"mysql://x\"}", "store.url"),
            ("http: {port: 70000}", "http.port"),
            ("http: {trustedProxies: [\"10.0.0.0/40\"]}", "http.trustedProxies[0]"),
            ("limits: {pumping: {window: soon}}", "limits.pumping.window"),
            ("limits: {pumping: {multipel: 3}}", "limits.pumping.multipel"),
            ("limits: {leasing: {lifetime: 20s}}", "limits.leasing.lifetime"),
            ("limits: {leasing: {above: -1}}", "limits.leasing.above"),
            ("limits: {prefixDigits: 1}", "limits.prefixDigits"),
            ("workers: {sms: {throttleDelays: [10ms]}}", "workers.sms.throttleDelays[0]"),
            ("email: {from: \"Herald <no-reply>\"}", "email.from"),
            ("email: {replyTo: \"a b@c\"}", "email.replyTo"),
            ("email: {provider: console}", "email.provider"),
            ("email: {provider: sendmail}", "email.provider"),
            ("email: {smtp: {url: \"http://mail\"}}", "email.smtp.url"),
            ("email: {smtp: {heloName: \"bad name\"}}", "email.smtp.heloName"),
            ("email: {smtp: {username: u}}", "email.smtp.password"),
            ("email: {templateDir: /nonexistent}", "email.templateDir"),
            ("limits: {perEmail: [\"5 a day\"]}", "limits.perEmail[0]"),
        ])
    func badValues(extra: String, key: String) {
        #expect(problem(Self.minimal + "\n" + extra)?.key == key)
    }

    @Test("project rules: ids, keys, test numbers and their codes")
    func projectRules() {
        #expect(problem("projects: []")?.key == "projects")
        #expect(problem("projects:\n  - id: Bad_ID\n    apiKeys: [k]")?.key == "projects[0].id")
        #expect(problem("projects:\n  - id: p\n    apiKeys: []")?.key == "projects[0].apiKeys")
        #expect(
            problem("projects:\n  - {id: a, apiKeys: [k]}\n  - {id: b, apiKeys: [k]}\nsms: {http: {url: \"http://x\"}}")?.key == "projects[1].apiKeys"
        )
        #expect(problem("projects:\n  - {id: a, apiKeys: [k]}\n  - {id: a, apiKeys: [j]}\nsms: {http: {url: \"http://x\"}}")?.key == "projects[1].id")
        let badNumber = problem(
            "projects:\n  - id: p\n    apiKeys: [k]\n    phone: {testNumbers: {\"12345\": \"123456\"}}\nsms: {http: {url: \"http://x\"}}")
        #expect(badNumber?.key == "projects[0].phone.testNumbers.12345")
        let badCode = problem(
            "projects:\n  - id: p\n    apiKeys: [k]\n    phone: {testNumbers: {\"+16505553434\": \"12\"}}\nsms: {http: {url: \"http://x\"}}")
        #expect(badCode?.problem.contains("exactly 6 digits") == true)
        let eleven = (0..<11).map { "\"+1650555\(3400 + $0)\": \"123456\"" }.joined(separator: ", ")
        #expect(
            problem("projects:\n  - id: p\n    apiKeys: [k]\n    phone: {testNumbers: {\(eleven)}}\nsms: {http: {url: \"http://x\"}}")?.key
                == "projects[0].phone.testNumbers")
        // Quoted and unquoted codes are both strings: a leading zero survives.
        let leadingZero = try? ConfigurationLoader.parse(
            yaml: "projects:\n  - id: p\n    apiKeys: [k]\n    phone: {testNumbers: {\"+16505553434\": 012345}}\nsms: {http: {url: \"http://x\"}}")
        #expect(leadingZero?.projects[0].phone.testNumbers["+16505553434"] == "012345")
    }

    @Test("iosApps and androidApps: iosBundleIds stays a shorthand; team ids and fingerprints are checked")
    func apps() throws {
        let base = "sms: {http: {url: \"http://x\"}}\nprojects:\n  - id: p\n    apiKeys: [k]\n    iosBundleIds: [com.a, com.b]\n"
        let parsed = try ConfigurationLoader.parse(
            yaml: base
                + "    iosApps: [{bundleId: com.b, teamId: ABCDE12345, reversedClientId: com.googleusercontent.apps.1-x, appId: \"1:1:ios:f\"}]\n")
        #expect(parsed.projects[0].iosBundleIds.sorted() == ["com.a", "com.b"])
        let app = try #require(parsed.projects[0].iosApps.first { $0.bundleId == "com.b" })
        #expect(app.callbackSchemes == ["com.googleusercontent.apps.1-x", "app-1-1-ios-f"])
        #expect(problem(base + "    iosApps: [{bundleId: com.c, teamId: short}]\n")?.key == "projects[0].iosApps[0].teamId")
        #expect(
            problem(base + "    androidApps: [{packageName: com.d, sha256CertFingerprints: [\"AB:CD\"]}]\n")?.key
                == "projects[0].androidApps[0].sha256CertFingerprints")
        #expect(problem(base + "    androidApps: [{sha256CertFingerprints: []}]\n")?.key == "projects[0].androidApps[0].packageName")
    }

    @Test(
        "test numbers must be fictional unless the project allows real ones",
        arguments: [
            ("+16505553434", true), ("+12125550123", true), ("+447700900123", true), ("+442079460000", true), ("+441134960999", true),
            ("+441914980001", true), ("+61491570006", true), ("+61255501234", true), ("+61370101234", true),
            ("+16505551234", true), ("+16505553435", true), ("+15005550006", true),
            ("+14155552671", true), ("+447911123456", false), ("+4915112345678", false), ("+16502530000", false), ("+447700901000", false),
            ("+61491580000", false), ("+12025550100", true),
        ])
    func fictionalTestNumbers(_ number: String, _ fictional: Bool) {
        let yaml = { (allow: Bool) in
            "projects:\n  - id: p\n    apiKeys: [k]\n    phone: {testNumbersAllowReal: \(allow), testNumbers: {\"\(number)\": \"123456\"}}\nsms: {http: {url: \"http://x\"}}"
        }
        let refused = problem(yaml(false))
        #expect((refused == nil) == fictional, "\(number): \(refused.map { "\($0.key): \($0.problem)" } ?? "accepted")")
        if fictional == false {
            #expect(refused?.key == "projects[0].phone.testNumbers.\(number)")
            #expect(problem(yaml(true)) == nil, "allowed with testNumbersAllowReal")
        }
    }

    @Test("the console provider needs devMode, the http provider needs a URL")
    func providers() {
        #expect(problem("projects: [{id: p, apiKeys: [k]}]\nsms: {provider: console}")?.key == "sms.provider")
        #expect(problem("projects: [{id: p, apiKeys: [k]}]")?.key == "sms.http.url")
        #expect(problem("projects: [{id: p, apiKeys: [k]}]\nsms: {provider: console}\ndevMode: true") == nil)
    }

    @Test("HERALD_* variables override any key, lists and maps in flow syntax")
    func environmentOverrides() throws {
        let configuration = try ConfigurationLoader.parse(
            yaml: Self.minimal,
            environment: [
                "HERALD_SMS_HTTP_URL": "http://gateway:8080/send",
                "HERALD_PROJECTS_0_PHONE_CODE_TTL": "10m",
                "HERALD_WORKERS_SMS_METRICS_PORT": "9200",
                "HERALD_LIMITS_PER_NUMBER": "[\"3/10m\", \"10/1d\"]",
                "HERALD_SMS_HTTP_HEADERS": "{Authorization: \"Bearer t\"}",
                "HERALD_DEV_MODE": "true",
                "HERALD_CONFIG": "ignored.yaml",
                "PATH": "/usr/bin",
            ])
        #expect(configuration.sms.http.url == "http://gateway:8080/send")
        #expect(configuration.projects[0].phone.codeTTL == .seconds(600))
        #expect(configuration.workers.sms.metricsPort == 9200)
        #expect(configuration.limits.perNumber.map(\.description) == ["3/10m", "10/1d"])
        #expect(configuration.sms.http.headers == ["Authorization": "Bearer t"])
        #expect(configuration.devMode)
        // null unsets a key set in the file, as `key: null` would.
        let unset = try ConfigurationLoader.parse(
            yaml: Self.minimal + "\ntokens: {signingKeyFile: /etc/herald/key.pem}\n", environment: ["HERALD_TOKENS_SIGNING_KEY_FILE": "null"])
        #expect(unset.tokens.signingKeyFile == nil)
    }

    @Test("a bad or unknown HERALD_* variable is named")
    func environmentErrors() {
        let bad = problem(Self.minimal, environment: ["HERALD_AMQP_HEARTBEAT": "often"])
        #expect(bad?.key == "HERALD_AMQP_HEARTBEAT (amqp.heartbeat)")
        #expect(problem(Self.minimal, environment: ["HERALD_SMS_HTTP_URLL": "x"])?.key == "HERALD_SMS_HTTP_URLL")
        #expect(problem(Self.minimal, environment: ["HERALD_PROJECTS_3_ID": "x"])?.key == "HERALD_PROJECTS_3_ID")
        let typo = problem(Self.minimal, environment: ["HERALD_HTTP_PROT": "9100"])
        #expect(typo?.key == "HERALD_HTTP_PROT")
        #expect(typo?.problem.contains("did you mean HERALD_HTTP_PORT?") == true)
        // A malformed list is an error for Herald's own variables.
        #expect(problem(Self.minimal, environment: ["HERALD_LIMITS_PER_NUMBER": "[\"5/1h\""])?.key == "HERALD_LIMITS_PER_NUMBER")
    }

    @Test("Kubernetes service-link variables and names under no key are ignored, and listed once")
    func kubernetesServiceLinks() throws {
        let injected = [
            // A Service named `herald` exposing 9099 …
            "HERALD_PORT": "tcp://10.0.0.7:9099", "HERALD_SERVICE_HOST": "10.0.0.7", "HERALD_SERVICE_PORT": "9099",
            "HERALD_SERVICE_PORT_HTTP": "9099", "HERALD_PORT_9099_TCP": "tcp://10.0.0.7:9099", "HERALD_PORT_9099_TCP_PROTO": "tcp",
            "HERALD_PORT_9099_TCP_PORT": "9099", "HERALD_PORT_9099_TCP_ADDR": "10.0.0.7",
            // … one named `herald-http`, whose link looks like the http.port key but holds a URL …
            "HERALD_HTTP_PORT": "tcp://10.0.0.8:80", "HERALD_HTTP_SERVICE_HOST": "10.0.0.8",
            // … and one named `herald-api`, under no top-level key.
            "HERALD_API_PORT": "tcp://10.0.0.9:9099", "HERALD_API_PORT_9099_TCP_ADDR": "10.0.0.9",
        ]
        var environment = injected
        environment["HERALD_SMS_PROVIDER"] = "console"
        environment["HERALD_DEV_MODE"] = "true"
        let configuration = try ConfigurationLoader.parse(yaml: Self.minimal, environment: environment)
        #expect(configuration.http.port == 9099)
        #expect(configuration.sms.provider == .console)
        #expect(configuration.ignoredEnvironment == injected.keys.sorted())
        // A number in HERALD_HTTP_PORT is the key again.
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal, environment: ["HERALD_HTTP_PORT": "9200"]).http.port == 9200)
    }

    @Test("safe defaults: enumeration protection on, metrics on loopback port 9100, a 30 s idle timeout, lookup and password throttles")
    func safeDefaults() throws {
        let configuration = try ConfigurationLoader.parse(yaml: Self.minimal)
        #expect(configuration.projects[0].emailLink.enumerationProtection)
        #expect(configuration.http.metricsHost == "127.0.0.1")
        #expect(configuration.http.metricsPort == 9100)
        #expect(configuration.http.idleTimeout == .seconds(30))
        #expect(configuration.http.maxConnections == HeraldConfiguration.HTTP.maxConnections(fileLimit: ProcessLimits.openFiles))
        #expect(configuration.limits.lookupsPerIP == [RatePolicy.parse("30/1m")!, RatePolicy.parse("300/1h")!])
        #expect(configuration.limits.passwordChangesPerUser == [RatePolicy.parse("5/1h")!])
    }

    @Test("admin.cookieSecure: on unless devMode, either way when set; limits.adminLoginsPerIP defaults to 10/15m")
    func adminCookie() throws {
        let plain = try ConfigurationLoader.parse(yaml: Self.minimal)
        #expect(plain.admin.cookieSecure)
        #expect(plain.limits.adminLoginsPerIP == [RatePolicy.parse("10/15m")!])
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal + "\ndevMode: true").admin.cookieSecure == false)
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal + "\ndevMode: true\nadmin: {cookieSecure: true}").admin.cookieSecure)
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal + "\nadmin: {cookieSecure: false}").admin.cookieSecure == false)
    }

    @Test("http.maxConnections: derived from the open-file limit, at least 16; below 16 refused")
    func connectionCap() throws {
        #expect(HeraldConfiguration.HTTP.maxConnections(fileLimit: 1024) == 384)
        #expect(HeraldConfiguration.HTTP.maxConnections(fileLimit: 20_000) == 9872)
        #expect(HeraldConfiguration.HTTP.maxConnections(fileLimit: 100) == 16)
        #expect(HeraldConfiguration.HTTP.maxConnections(fileLimit: .max) == (1 << 20 - 256) / 2)
        #expect(problem(Self.minimal + "\nhttp: {maxConnections: 15}")?.key == "http.maxConnections")
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal + "\nhttp: {maxConnections: 16}").http.maxConnections == 16)
    }

    @Test("unsafe settings are refused: the emulator admin token or a short one without devMode, devMode off loopback, smuggled headers, odd URLs")
    func unsafeSettings() throws {
        let owner = problem(Self.minimal + "\nadmin: {tokens: [owner]}")
        #expect(owner?.key == "admin.tokens[0]")
        #expect(owner?.problem.contains("devMode") == true)
        #expect(problem(Self.minimal + "\nadmin: {tokens: [\"0123456789abcdef0123456789abcde\"]}")?.key == "admin.tokens[0]")
        #expect(problem(Self.minimal + "\nadmin: {tokens: [\"0123456789abcdef0123456789abcdef\"]}") == nil)
        // devMode: the emulator token is fine, a public listener is not.
        #expect(problem(Self.minimal + "\ndevMode: true\nadmin: {tokens: [owner]}") == nil)
        #expect(problem(Self.minimal + "\ndevMode: true\nhttp: {host: 0.0.0.0}")?.key == "devMode")
        #expect(problem(Self.minimal + "\ndevMode: true\nhttp: {host: \"::1\"}") == nil)
        let crlf = Self.minimal.replacingOccurrences(
            of: #"http: {url: "http://127.0.0.1:1/sms"}"#, with: #"http: {url: "http://127.0.0.1:1/sms", headers: {X-Key: "a\r\nX-Evil: 1"}}"#)
        #expect(problem(crlf)?.key == "sms.http.headers.X-Key")
        let badName = Self.minimal.replacingOccurrences(
            of: #"http: {url: "http://127.0.0.1:1/sms"}"#, with: #"http: {url: "http://127.0.0.1:1/sms", headers: {"X Key": "a"}}"#)
        #expect(problem(badName)?.key == "sms.http.headers.X Key")
        let fileURL = Self.minimal.replacingOccurrences(of: #"http: {url: "http://127.0.0.1:1/sms"}"#, with: #"http: {url: "file:///etc/passwd"}"#)
        #expect(problem(fileURL)?.key == "sms.http.url")
        func project(_ extra: String) -> String {
            Self.minimal.replacingOccurrences(of: "apiKeys: [k1]", with: "apiKeys: [k1]\n    \(extra)")
        }
        #expect(problem(project(#"emailLink: {actionUrl: "javascript:alert(1)"}"#))?.key == "projects[0].emailLink.actionUrl")
        #expect(problem(project("emailLink: {appSchemes: [javascript]}"))?.key == "projects[0].emailLink.appSchemes[0]")
        #expect(problem(project("emailLink: {appSchemes: [com.example.app]}")) == nil)
    }

    @Test("generated secrets are created once and then reused")
    func keyMaterial() throws {
        let directory = NSTemporaryDirectory() + "herald-keys-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = try ConfigurationLoader.parse(yaml: Self.minimal, environment: ["HERALD_STATE_DIR": directory])
        let first = try KeyMaterial.sealingKey(configuration)
        let second = try KeyMaterial.sealingKey(configuration)
        #expect(first.count == 32)
        #expect(first == second)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/sealing.key")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }
}
