import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Logging
import Testing

/// The real executables (herald-api, herald-sms-worker) against the real broker, a real store (a SQLite
/// file, or a PostgreSQL schema of its own) and a fake SMS gateway, each test with its own exchange,
/// state directory and ports.
final class StackHarness: @unchecked Sendable {
    // @unchecked: mutated only by the test that owns it, sequentially.
    var settings: TestConfiguration
    let gateway: FakeSMSGateway
    let configPath: String
    let admin: AMQPConnection
    var api: HeraldProcess?
    var workers: [HeraldProcess] = []
    var stoppedProcesses: [HeraldProcess] = []
    /// herald-api processes beside `api` (`startAnotherAPI`).
    var otherAPIs: [HeraldProcess] = []
    let client: HeraldClient

    /// The test's own handle on the shared store, opened on first use.
    private var openedStore: SQLStore?

    init(brokerURL: String = TestBroker.url, store: TestStore = .sqlite, _ adjust: (inout TestConfiguration) -> Void = { _ in }) async throws {
        gateway = try await FakeSMSGateway.start()
        var settings = TestConfiguration()
        settings.amqpURL = brokerURL
        settings.storeURL = try store.freshURL()
        settings.gatewayURL = gateway.url
        settings.apiPort = freePort()
        settings.metricsPort = freePort()
        settings.apiMetricsPort = freePort()
        adjust(&settings)
        self.settings = settings
        configPath = try settings.write()
        admin = try await TestBroker.connection(.publisher, name: "test-admin", url: brokerURL)
        let topology = Topology(configuration: try settings.parsed())
        try await admin.perform { try topology.declare(on: $0) }
        client = HeraldClient(port: settings.apiPort)
    }

    /// Runs `body` against a fresh stack and always tears it down (processes, queues, state directory).
    static func run(
        brokerURL: String = TestBroker.url, store: TestStore = .sqlite, configure: (inout TestConfiguration) -> Void = { _ in },
        _ body: (StackHarness) async throws -> Void
    ) async throws {
        let stack = try await StackHarness(brokerURL: brokerURL, store: store, configure)
        do {
            try await body(stack)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    var topology: Topology { Topology(configuration: try! settings.parsed()) }
    var keys: HeraldKeys { HeraldKeys(master: Data(base64Encoded: settings.sealingKey!)!) }

    func startAPI(pipeStderr: Bool = false) async throws {
        let process = try HeraldProcess("herald-api", arguments: ["--config", configPath], logDirectory: settings.stateDir, pipeStderr: pipeStderr)
        api = process
        _ = await eventually(timeout: .seconds(20)) { (try? await self.client.get("/readyz"))?.status == 200 }
        guard (try? await client.get("/readyz"))?.status == 200 else {
            throw TestFailure("herald-api did not become ready:\n\(process.output.suffix(3000))")
        }
    }

    /// Another herald-api on the same configuration and store, on HTTP and metrics ports of its own,
    /// once it answers `/readyz`: a second API host.
    func startAnotherAPI(metricsPort: Int = freePort()) async throws -> (process: HeraldProcess, client: HeraldClient) {
        let port = freePort()
        let process = try HeraldProcess(
            "herald-api", arguments: ["--config", configPath], logDirectory: settings.stateDir,
            environment: ["HERALD_HTTP_PORT": String(port), "HERALD_HTTP_METRICS_PORT": String(metricsPort)])
        otherAPIs.append(process)
        let client = HeraldClient(port: port)
        guard await eventually(timeout: .seconds(20), { (try? await client.get("/readyz"))?.status == 200 }) else {
            throw TestFailure("the other herald-api did not become ready:\n\(process.output.suffix(3000))")
        }
        return (process, client)
    }

    @discardableResult
    func startWorker(metricsPort: Int? = nil, environment: [String: String] = [:], pipeStderr: Bool = false) async throws -> HeraldProcess {
        var env = environment
        env["HERALD_WORKERS_SMS_METRICS_PORT"] = String(metricsPort ?? freePort())
        let process = try HeraldProcess(
            "herald-sms-worker", arguments: ["--config", configPath], logDirectory: settings.stateDir, environment: env, pipeStderr: pipeStderr)
        workers.append(process)
        try await process.waitForOutput("amqp connected")
        try await process.waitForOutput("worker publisher")
        return process
    }

    /// Starts herald-push-worker (the configuration must name an APNs key, e.g. from `APNsFixture`).
    @discardableResult
    func startPushWorker(metricsPort: Int? = nil) async throws -> HeraldProcess {
        try await startWorker(.push, metricsPort: metricsPort)
    }

    /// Starts herald-email-worker (the configuration names the SMTP server, e.g. an `SMTPSink`).
    @discardableResult
    func startEmailWorker(metricsPort: Int? = nil) async throws -> HeraldProcess {
        try await startWorker(.email, metricsPort: metricsPort)
    }

    /// Starts herald-apple-worker (the configuration names an Apple key, e.g. a `FakeApple`'s).
    @discardableResult
    func startAppleWorker(metricsPort: Int? = nil) async throws -> HeraldProcess {
        try await startWorker(.apple, metricsPort: metricsPort)
    }

    /// Starts the worker executable of `type` on its own metrics port, once it consumes.
    func startWorker(_ type: JobType, metricsPort: Int? = nil) async throws -> HeraldProcess {
        let process = try HeraldProcess(
            "herald-\(type.rawValue)-worker", arguments: ["--config", configPath], logDirectory: settings.stateDir,
            environment: ["HERALD_WORKERS_\(type.rawValue.uppercased())_METRICS_PORT": String(metricsPort ?? freePort())])
        workers.append(process)
        try await process.waitForOutput("amqp connected")
        try await process.waitForOutput("worker publisher")
        return process
    }

    /// Sends a code to `phone` and returns the sessionInfo.
    func sendCode(to phone: String = "+15555550100") async throws -> String {
        let answer = try await client.post(
            "/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": phone])
        guard answer.status == 200, let session = answer.string("sessionInfo") else {
            throw TestFailure("sendVerificationCode failed: \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        return session
    }

    /// Waits until the gateway has `count` requests.
    func waitForGateway(_ count: Int, timeout: Duration = .seconds(30)) async throws {
        let reached = await eventually(timeout: timeout) { gateway.received.count >= count }
        guard reached else {
            throw TestFailure(
                "gateway got \(gateway.received.count) of \(count) requests; worker output:\n\(workers.map(\.output).joined().suffix(4000))")
        }
    }

    /// Runs `herald-admin <arguments> --config <this stack's file>`; its output, or a failure with it.
    /// herald-admin's exit status and output, with `--config` first (before the subcommand) or last.
    func adminExit(_ arguments: [String], configFirst: Bool = false) async throws -> (status: Int32, output: String) {
        let config = ["--config", configPath]
        let process = try HeraldProcess(
            "herald-admin", arguments: configFirst ? config + arguments : arguments + config, logDirectory: settings.stateDir)
        let status = await process.waitForExit(timeout: .seconds(30))
        return (status, process.output)
    }

    func admin(_ arguments: [String]) async throws -> String {
        let process = try HeraldProcess("herald-admin", arguments: arguments + ["--config", configPath], logDirectory: settings.stateDir)
        let status = await process.waitForExit(timeout: .seconds(30))
        guard status == 0 else { throw TestFailure("herald-admin \(arguments) exited \(status):\n\(process.output)") }
        return process.output
    }

    /// The code in an SMS text (the first run of six digits).
    static func code(in text: String?) -> String? {
        guard let text, let range = text.range(of: #"\d{6}"#, options: .regularExpression) else { return nil }
        return String(text[range])
    }

    /// The store the stack's processes share, as a test process sees it.
    var store: SQLStore {
        get async throws {
            if let openedStore { return openedStore }
            let store = try await SQLStore.open(try settings.parsed().store, logger: Logger(label: "test"))
            openedStore = store
            return store
        }
    }

    /// All output of every process this harness started.
    var allOutput: String { ([api].compactMap { $0 } + otherAPIs + workers + stoppedProcesses).map(\.output).joined(separator: "\n") }

    func stop() async {
        for process in workers + otherAPIs + [api].compactMap({ $0 }) { await process.terminate() }
        let topology = self.topology
        try? await admin.perform { try topology.delete(on: $0) }
        await admin.shutdown()
        await gateway.stop()
        await openedStore?.close()
        if let url = settings.storeURL { await TestStore.dropSchema(of: url) }
        try? FileManager.default.removeItem(atPath: settings.stateDir)
    }
}
