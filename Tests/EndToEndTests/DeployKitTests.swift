import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Logging
import Testing
import Yams

/// deploy/ is tested as far as this machine can: systemd units verified by systemd, configurations
/// loaded by Herald's own loader, the RabbitMQ definitions imported into a real broker, the PostgreSQL
/// script run against a real server, every YAML and JSON file parsed and the Kubernetes objects checked
/// for their required fields. No Docker engine or Kubernetes cluster runs here (see docs/several-machines.md).
@Suite("deploy/: systemd units, example configurations, RabbitMQ definitions, PostgreSQL script, Kubernetes and Compose files")
struct DeployKitTests {
    static let deploy = TestConfiguration.repositoryRoot.appendingPathComponent("deploy").path

    static func text(_ path: String) throws -> String {
        try String(contentsOfFile: deploy + "/" + path, encoding: .utf8)
    }

    /// What secrets and installed paths a configuration of deploy/ expects, pointed at this checkout.
    static func environment(secrets directory: String) throws -> [String: String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "s3cret\n".write(toFile: directory + "/amqp-password", atomically: true, encoding: .utf8)
        return [
            "HERALD_SMS_TEMPLATE_DIR": TestConfiguration.templateDir, "HERALD_EMAIL_TEMPLATE_DIR": TestConfiguration.emailTemplateDir,
            "HERALD_AMQP_PASSWORD_FILE": directory + "/amqp-password", "HERALD_CODES_SEALING_KEY": Data(count: 32).base64EncodedString(),
        ]
    }

    static func configuration(_ yaml: String, secrets directory: String) throws -> HeraldConfiguration {
        try ConfigurationLoader.parse(yaml: yaml, environment: try environment(secrets: directory))
    }

    @Test("systemd units: systemd-analyze verify has nothing to say; hardened, no restart loop on a configuration error")
    func systemdUnits() async throws {
        let directory = NSTemporaryDirectory() + "herald-units-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let units = try FileManager.default.contentsOfDirectory(atPath: Self.deploy + "/systemd").sorted()
        #expect(
            units == [
                "herald-api.service", "herald-apple-worker.service", "herald-email-worker.service", "herald-push-worker.service",
                "herald-sms-worker@.service",
            ])
        for unit in units {
            let text = try Self.text("systemd/" + unit)
            for line in [
                "User=herald", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=",
                "RestartPreventExitStatus=78", "EnvironmentFile=-/etc/herald/herald.env",
            ] {
                #expect(text.split(separator: "\n").contains { $0 == line }, "\(unit) lacks \(line)")
            }
            // verify checks that ExecStart exists: point it at the binaries this build made.
            try text.replacingOccurrences(of: "/usr/local/bin", with: HeraldProcess.binDirectory)
                .write(toFile: directory + "/" + unit, atomically: true, encoding: .utf8)
        }
        #expect(try Self.text("systemd/herald-sms-worker@.service").contains("Environment=HERALD_WORKERS_SMS_METRICS_PORT=%i"))
        let instances = units.map { $0.replacingOccurrences(of: "@.service", with: "@9111.service") }
        let output = try await shell("cd \(shellQuoted(directory)) && systemd-analyze verify \(instances.joined(separator: " "))")
        #expect(output.isEmpty, "systemd-analyze verify: \(output)")
    }

    @Test("the example configurations load, and API and worker hosts declare one topology: the one in rabbitmq/definitions.json")
    func exampleConfigurations() throws {
        let secrets = NSTemporaryDirectory() + "herald-secrets-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        let api = try Self.configuration(try Self.text("config/herald-api.yaml"), secrets: secrets)
        let worker = try Self.configuration(try Self.text("config/herald-worker.yaml"), secrets: secrets)
        #expect(api.devMode == false && worker.devMode == false)
        #expect(api.amqp.endpoints.count == 3 && api.amqp.endpoints.allSatisfy(\.tls))
        #expect(api.amqp.endpoints.allSatisfy { $0.password == "s3cret" })
        guard case .postgres(let location) = api.store.location else {
            Issue.record("the API host's store is not PostgreSQL")
            return
        }
        #expect(location.sslMode == .verifyFull)
        #expect(Topology(configuration: api) == Topology(configuration: worker))
        let exported = try Topology(configuration: worker).definitions(virtualHost: "herald", user: "herald")
        #expect(try Self.text("rabbitmq/definitions.json") == exported, "regenerate: herald-admin topology definitions")
    }

    @Test("the RabbitMQ definitions import into a broker, after which Herald declares its topology there without a conflict")
    func definitionsImport() async throws {
        try await PrivateBroker.with { broker in
            let definitions = Self.deploy + "/rabbitmq/definitions.json"
            try await broker.run("ctl import_definitions \(shellQuoted(definitions))")
            try await broker.run("ctl change_password herald herald-test-password")
            let secrets = NSTemporaryDirectory() + "herald-secrets-\(UUID().uuidString.prefix(8))"
            defer { try? FileManager.default.removeItem(atPath: secrets) }
            var environment = try Self.environment(secrets: secrets)
            environment["HERALD_AMQP_URL"] = "amqp://herald:herald-test-password@127.0.0.1:\(broker.port)/herald"
            environment["HERALD_AMQP_TLS"] = "{caFile: null}"
            environment["HERALD_AMQP_PASSWORD_FILE"] = "null"
            environment["HERALD_STORE_URL"] = "sqlite:\(secrets)/herald.sqlite"
            environment["HERALD_STORE_TLS"] = "{caFile: null}"
            let declare = try HeraldProcess(
                "herald-admin", arguments: ["topology", "declare", "--config", Self.deploy + "/config/herald-worker.yaml"], logDirectory: secrets,
                environment: environment)
            #expect(await declare.waitForExit(timeout: .seconds(30)) == 0, "\(declare.output)")
            #expect(declare.output.contains("declared exchange herald and herald.dlx"))
            let queues = try await shell(
                "AMQP_PORT=\(broker.port) HERALD_STATE_DIR=\(shellQuoted(broker.directory)) \(shellQuoted(TestConfiguration.repositoryRoot.path + "/scripts/broker.sh")) ctl -q list_queues -p herald name type --no-table-headers"
            )
            #expect(queues.contains("herald.sms\tquorum"), "\(queues)")
        }
    }

    @Test("the PostgreSQL script makes a role that owns its database, and Herald migrates it")
    func postgresRole() async throws {
        let admin = try TestStore.postgresURL()
        guard case .postgres(let server) = try StoreLocation(parsing: admin) else { throw TestFailure("not a PostgreSQL URL") }
        let name = "herald_\(UUID().uuidString.prefix(8).lowercased())"
        let psql =
            "PGPASSWORD=\(shellQuoted(server.password ?? "")) /usr/lib/postgresql/15/bin/psql -q -h \(server.host) -p \(server.port) -U \(server.user)"
        defer {
            Task {
                _ = try? await shell("\(psql) -d postgres -c 'DROP DATABASE IF EXISTS \(name)' -c 'DROP ROLE IF EXISTS \(name)'")
            }
        }
        _ = try await shell(
            "\(psql) -d postgres -v role=\(name) -v database=\(name) -v password=\"'role-password'\" -f \(shellQuoted(Self.deploy + "/postgres/herald.sql"))"
        )
        let url = "postgres://\(name):role-password@\(server.host):\(server.port)/\(name)?sslmode=disable"
        let store = try await SQLStore.open(
            StoreSettings(url: url, location: try StoreLocation(parsing: url), poolSize: 2), logger: Logger(label: "test"))
        let status = try await store.status()
        #expect(status.version == Migrations.latestVersion)
        try await store.recordPending(jobID: UUID(), projectID: "p", type: .sms, destination: "+1", now: Date())
        await store.close()
        // Without a password the script stops before creating anything.
        await #expect(throws: (any Error).self) {
            try await shell("\(psql) -d postgres -v role=\(name)x -f \(shellQuoted(Self.deploy + "/postgres/herald.sql"))")
        }
    }

    @Test("Kubernetes: every object has its required fields; selectors, probes, ports and KEDA's target agree; the ConfigMap loads")
    func kubernetes() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.deploy + "/kubernetes").filter { $0.hasSuffix(".yaml") }.sorted()
        let kustomization = try #require(try Yams.load(yaml: try Self.text("kubernetes/kustomization.yaml")) as? [String: Any])
        let resources = try #require(kustomization["resources"] as? [String])
        #expect(Set(resources) == Set(files.filter { $0 != "kustomization.yaml" }), "kustomization lists every manifest")
        var objects: [[String: Any]] = []
        for file in resources {
            for document in try Yams.load_all(yaml: try Self.text("kubernetes/" + file)) {
                let object = try #require(document as? [String: Any], "\(file)")
                let metadata = object["metadata"] as? [String: Any]
                #expect(object["apiVersion"] is String && object["kind"] is String, "\(file)")
                #expect((metadata?["name"] as? String)?.isEmpty == false, "\(file)")
                objects.append(object)
            }
        }
        func of(_ kind: String) -> [[String: Any]] { objects.filter { $0["kind"] as? String == kind } }
        func name(_ object: [String: Any]) -> String { (object["metadata"] as? [String: Any])?["name"] as? String ?? "" }
        func path(_ object: Any?, _ keys: String...) -> Any? {
            keys.reduce(object) { current, key in (current as? [String: Any])?[key] }
        }

        let deployments = of("Deployment")
        #expect(
            Set(deployments.map(name)) == ["herald-api", "herald-sms-worker", "herald-email-worker", "herald-push-worker", "herald-apple-worker"])
        var podLabels: [String: [String: String]] = [:]
        for deployment in deployments {
            let labels = try #require(path(deployment, "spec", "template", "metadata", "labels") as? [String: String])
            let selector = try #require(path(deployment, "spec", "selector", "matchLabels") as? [String: String])
            #expect(selector.allSatisfy { labels[$0.key] == $0.value }, "\(name(deployment)): selector matches its pods")
            podLabels[name(deployment)] = labels
            let containers = try #require(path(deployment, "spec", "template", "spec", "containers") as? [[String: Any]])
            let container = try #require(containers.first)
            #expect((container["image"] as? String)?.isEmpty == false)
            #expect((container["command"] as? [String])?.first == name(deployment))
            let ports = (container["ports"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(path(container, "readinessProbe", "httpGet", "path") as? String == "/readyz", "\(name(deployment))")
            #expect(path(container, "livenessProbe", "httpGet", "path") as? String == "/healthz", "\(name(deployment))")
            for probe in ["readinessProbe", "livenessProbe"] {
                #expect(ports.contains(path(container, probe, "httpGet", "port") as? String ?? ""), "\(name(deployment)) \(probe) port")
            }
            #expect(path(container, "securityContext", "allowPrivilegeEscalation") as? Bool == false)
            #expect(path(container, "securityContext", "readOnlyRootFilesystem") as? Bool == true)
            #expect(path(deployment, "spec", "template", "spec", "securityContext", "runAsNonRoot") as? Bool == true)
        }
        for object in of("Service") + of("PodDisruptionBudget") {
            let selector =
                (path(object, "spec", "selector", "matchLabels") ?? path(object, "spec", "selector")) as? [String: String] ?? [:]
            #expect(selector.isEmpty == false)
            #expect(podLabels.values.contains { labels in selector.allSatisfy { labels[$0.key] == $0.value } }, "\(name(object)) selects pods")
        }
        let scaled = try #require(of("ScaledObject").first)
        #expect(podLabels[path(scaled, "spec", "scaleTargetRef", "name") as? String ?? ""] != nil)
        let trigger = try #require((path(scaled, "spec", "triggers") as? [[String: Any]])?.first)
        #expect(trigger["type"] as? String == "rabbitmq")
        #expect(path(trigger, "metadata", "queueName") as? String == "herald.sms")
        let authentication = path(trigger, "authenticationRef", "name") as? String
        #expect(of("TriggerAuthentication").map(name) == [authentication ?? ""])

        let secret = try #require(of("Secret").first)
        let secretData = try #require(path(secret, "stringData") as? [String: String])
        let keyRef = try #require((path(of("TriggerAuthentication").first, "spec", "secretTargetRef") as? [[String: Any]])?.first)
        #expect(secretData[keyRef["key"] as? String ?? ""] != nil)
        let configMap = try #require(of("ConfigMap").first)
        let yaml = try #require(path(configMap, "data", "herald.yaml") as? String)
        let secrets = NSTemporaryDirectory() + "herald-secrets-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        var environment = try Self.environment(secrets: secrets)
        for (key, value) in secretData where key.hasPrefix("HERALD_") && key != "HERALD_CODES_SEALING_KEY" { environment[key] = value }
        // The example's placeholders fail validation on purpose (a deployment that forgot them does not start).
        #expect(throws: ConfigError.self) { try ConfigurationLoader.parse(yaml: yaml, environment: environment) }
        environment["HERALD_ADMIN_TOKENS"] = "[\"\(String(repeating: "ab", count: 32))\"]"
        let configuration = try ConfigurationLoader.parse(yaml: yaml, environment: environment)
        #expect(configuration.http.metricsHost == "0.0.0.0", "kubelet probes reach the metrics listener")
        #expect(configuration.workers.sms.metricsPort == 9101)
    }

    @Test(
        "Docker: the compose file names the API, three workers, RabbitMQ and PostgreSQL; its configuration loads; the Dockerfile copies what exists")
    func docker() throws {
        let compose = try #require(try Yams.load(yaml: try Self.text("docker/docker-compose.yml")) as? [String: Any])
        let services = try #require(compose["services"] as? [String: Any])
        #expect(Set(services.keys) == ["api", "sms-worker", "email-worker", "push-worker", "apple-worker", "rabbitmq", "postgres"])
        for worker in ["api", "sms-worker", "email-worker", "push-worker", "apple-worker"] {
            let service = try #require(services[worker] as? [String: Any])
            #expect((service["command"] as? [String])?.first == "herald-\(worker == "api" ? "api" : worker)", "\(worker)")
        }
        let secrets = NSTemporaryDirectory() + "herald-secrets-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        _ = try Self.configuration(try Self.text("docker/herald.yaml"), secrets: secrets)
        for line in try Self.text("docker/Dockerfile").split(separator: "\n") where line.hasPrefix("COPY ") && line.contains("--from") == false {
            let source = String(line.split(separator: " ")[1])
            #expect(
                FileManager.default.fileExists(atPath: TestConfiguration.repositoryRoot.appendingPathComponent(source).path), "COPY \(source)")
        }
    }
}
