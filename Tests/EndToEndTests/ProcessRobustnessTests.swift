import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing

@Suite("Processes survive their surroundings: closed stderr, Kubernetes environment, unsafe start-up settings", .serialized)
struct ProcessRobustnessTests {
    /// The Prometheus sample value of `name{labels}` in `text`, if present.
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    static func lines(_ text: String, containing fragment: String) -> Int {
        text.split(separator: "\n").filter { $0.contains(fragment) }.count
    }

    @Test("closing the read end of stderr under load drops (and counts) log lines; herald-api and the worker keep serving and delivering")
    func closedStderr() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI(pipeStderr: true)
            let workerMetrics = freePort()
            let worker = try await stack.startWorker(metricsPort: workerMetrics, pipeStderr: true)
            _ = try await stack.sendCode(to: "+15555550100")
            try await stack.waitForGateway(1)

            // The log shipper goes away.
            stack.api?.closeStderrReader()
            worker.closeStderrReader()
            let queuedBefore = Self.lines(stack.api?.output ?? "", containing: "verification code queued")
            let answers = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        try await stack.client.post(
                            "/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey,
                            json: ["phoneNumber": "+1555555\(String(format: "%04d", 200 + index))"]
                        ).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0 == 200 }, "\(answers)")
            try await stack.waitForGateway(61)
            #expect(stack.api?.isRunning == true)
            #expect(worker.isRunning)
            // A line is counted when the process's writer thread fails to write it, which can come after the
            // answer and the SMS: waited for, as for the worker below.
            var apiText = ""
            let apiDropped = await eventually {
                apiText = String(
                    decoding: (try? await HeraldClient(port: stack.settings.apiMetricsPort).get("/metrics").body) ?? Data(), as: UTF8.self)
                return (Self.sample(apiText, #"herald_log_lines_dropped_total{stream="stderr"}"#) ?? 0) >= 60
            }
            // Lines that still reached the log after the close would mean another reader held the pipe open.
            let queuedAfter = Self.lines(stack.api?.output ?? "", containing: "verification code queued")
            #expect(
                apiDropped,
                "\(Self.sample(apiText, #"herald_log_lines_dropped_total{stream="stderr"}"#) ?? 0) dropped lines counted; \(queuedAfter - queuedBefore) send lines written after the close"
            )
            // The worker logs a send after its outcome is recorded, so after the gateway has it: the last
            // few lines may still be on their way when the gateway count is reached.
            var workerText = ""
            let workerDropped = await eventually {
                workerText = String(decoding: (try? await HeraldClient(port: workerMetrics).get("/metrics").body) ?? Data(), as: UTF8.self)
                return (Self.sample(workerText, #"herald_log_lines_dropped_total{stream="stderr"}"#) ?? 0) >= 60
            }
            #expect(workerDropped, "\(Self.sample(workerText, #"herald_log_lines_dropped_total{stream="stderr"}"#) ?? 0) dropped lines counted")
            #expect(Self.sample(workerText, #"herald_build_info{version="\#(BuildInfo.version)",revision="\#(BuildInfo.revision)"}"#) == 1)
        }
    }

    @Test("Kubernetes service-link variables are ignored with one warning; a typo in a HERALD_ key still stops the process with exit 78")
    func kubernetesEnvironment() async throws {
        try await StackHarness.run { stack in
            let links = [
                "HERALD_PORT": "tcp://10.0.0.7:9099", "HERALD_SERVICE_HOST": "10.0.0.7", "HERALD_SERVICE_PORT": "9099",
                "HERALD_PORT_9099_TCP": "tcp://10.0.0.7:9099", "HERALD_PORT_9099_TCP_ADDR": "10.0.0.7", "HERALD_PORT_9099_TCP_PORT": "9099",
                "HERALD_PORT_9099_TCP_PROTO": "tcp",
            ]
            let worker = try await stack.startWorker(environment: links)
            #expect(worker.isRunning)
            try await worker.waitForOutput("ignoring HERALD_* variables")
            let warning = try #require(worker.output.split(separator: "\n").first { $0.contains("ignoring HERALD_* variables") })
            for name in links.keys { #expect(warning.contains(name), "\(name)") }

            let typo = try HeraldProcess(
                "herald-sms-worker", arguments: ["--config", stack.configPath], logDirectory: stack.settings.stateDir,
                environment: ["HERALD_HTTP_PROT": "9100"])
            #expect(await typo.waitForExit(timeout: .seconds(20)) == 78)
            #expect(typo.output.contains("configuration key 'HERALD_HTTP_PROT': environment variable matches no configuration key"))
            #expect(typo.output.contains("did you mean HERALD_HTTP_PORT?"))
        }
    }

    @Test("without devMode, the admin token 'owner' or a short one stops herald-api (exit 78 naming admin.tokens); devMode refuses a public listener")
    func unsafeStartUp() async throws {
        for (adjust, expected) in [
            ({ (settings: inout TestConfiguration) in settings.adminTokens = ["owner"] }, "admin.tokens[0]"),
            ({ (settings: inout TestConfiguration) in settings.adminTokens = ["short-token"] }, "admin.tokens[0]"),
            (
                { (settings: inout TestConfiguration) in
                    settings.devMode = true
                    settings.apiHost = "0.0.0.0"
                }, "devMode"
            ),
        ] as [((inout TestConfiguration) -> Void, String)] {
            var settings = TestConfiguration()
            settings.devMode = false
            adjust(&settings)
            let path = try settings.write()
            defer { try? FileManager.default.removeItem(atPath: settings.stateDir) }
            let api = try HeraldProcess("herald-api", arguments: ["--config", path], logDirectory: settings.stateDir)
            #expect(await api.waitForExit(timeout: .seconds(20)) == 78)
            #expect(api.output.contains("herald: invalid configuration: configuration key '\(expected)'"), "\(api.output)")
        }
    }

    @Test("herald-api runs on jemalloc: its start-up line names it once malloc resolves to jemalloc's, and the library is mapped")
    func allocator() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            let api = try #require(stack.api)
            let starting = try #require(api.output.split(separator: "\n").first { $0.contains("starting") })
            // The line reports jemalloc only when the process's malloc resolves to jemalloc's.
            #expect(starting.contains(#""allocator":"jemalloc 5."#), "\(starting)")
            // Read to the end: /proc files report a size of 0, and maps is longer than one page.
            let file = try #require(FileHandle(forReadingAtPath: "/proc/\(api.pid)/maps"))
            let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self).split(separator: "\n")
            #expect(maps.contains { $0.hasSuffix("libjemalloc.so.2") })
        }
    }

    @Test("--version prints the version and the git revision on every executable")
    func version() async throws {
        let directory = NSTemporaryDirectory() + "herald-version-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var lines: Set<String> = []
        for executable in [
            "herald-api", "herald-sms-worker", "herald-email-worker", "herald-push-worker", "herald-apple-worker", "herald-admin", "herald-bench",
        ] {
            let process = try HeraldProcess(executable, arguments: ["--version"], logDirectory: directory)
            #expect(await process.waitForExit(timeout: .seconds(20)) == 0, "\(executable)")
            let line = process.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(
                line.range(of: #"^\d+\.\d+\.\d+(-[a-z0-9.]+)? \(([0-9a-f]{12}(-dirty)?|unknown)\)$"#, options: .regularExpression) != nil,
                "\(executable): \(line)")
            lines.insert(line)
        }
        #expect(lines.count == 1)
    }

    @Test("a worker on a taken metrics port stops with exit 78 naming the key and the address before it connects; port 0 picks one and logs it")
    func metricsPorts() async throws {
        try await StackHarness.run { stack in
            let port = freePort()
            let first = try await stack.startWorker(metricsPort: port)
            let second = try HeraldProcess(
                "herald-sms-worker", arguments: ["--config", stack.configPath], logDirectory: stack.settings.stateDir,
                environment: ["HERALD_WORKERS_SMS_METRICS_PORT": String(port)])
            #expect(await second.waitForExit(timeout: .seconds(30)) == 78)
            #expect(
                second.output.contains(
                    "herald: workers.sms.metricsPort 127.0.0.1:\(port) is in use; give each instance its own, e.g. HERALD_WORKERS_SMS_METRICS_PORT=\(port + 10)"
                ), "\(second.output)")
            #expect(second.output.contains("amqp connected") == false, "it stopped before connecting to the broker")
            #expect(first.isRunning)

            let any = try HeraldProcess(
                "herald-sms-worker", arguments: ["--config", stack.configPath], logDirectory: stack.settings.stateDir,
                environment: ["HERALD_WORKERS_SMS_METRICS_PORT": "0"])
            try await any.waitForOutput("health and metrics listening")
            let line = any.output.split(separator: "\n").first { $0.contains("health and metrics listening") } ?? ""
            let chosen = try #require(line.firstMatch(of: /"port":"?(\d+)/).flatMap { Int($0.1) })
            #expect(chosen > 0)
            #expect(try await HeraldClient(port: chosen).get("/healthz").status == 200)
            // Its settings are exported, and every outcome has a series before the first job.
            try await any.waitForOutput("worker started")
            let metrics = String(decoding: try await HeraldClient(port: chosen).get("/metrics").body, as: UTF8.self)
            let lines = metrics.split(separator: "\n")
            #expect(Self.sample(metrics, #"herald_worker_concurrency{type="sms"}"#) == Double(stack.settings.concurrency), "\(metrics)")
            #expect(lines.contains { $0.hasPrefix("herald_worker_provider_rate_per_second{") })
            #expect(Self.sample(metrics, #"herald_worker_provider_errors_total{provider="http",code="unreachable"}"#) == 0, "\(metrics)")
            for outcome in ["sent", "failed", "unauthenticated", "storeError"] {
                let label = outcome == "storeError" ? "store_error" : outcome
                #expect(
                    lines.contains { $0.hasPrefix("herald_worker_jobs_total{") && $0.contains("outcome=\"\(label)\"") && $0.hasSuffix(" 0") },
                    "\(label)")
            }
            _ = await any.terminate()
        }
    }

    @Test("herald-admin check: 0 for a safe file, 1 listing each unsafe setting, 78 for an invalid one")
    func check() async throws {
        let directory = NSTemporaryDirectory() + "herald-check-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func check(_ yaml: String) async throws -> (status: Int32?, output: String) {
            let path = directory + "/herald-\(UUID().uuidString.prefix(6)).yaml"
            try yaml.write(toFile: path, atomically: true, encoding: .utf8)
            let process = try HeraldProcess("herald-admin", arguments: ["check", "--config", path], logDirectory: directory)
            return (await process.waitForExit(timeout: .seconds(20)), process.output)
        }
        var settings = TestConfiguration()
        settings.stateDir = directory
        settings.appVerification = "{required: true}"
        let safe = try await check(settings.yaml)
        #expect(safe.status == 0, "\(safe.output)")
        var plain = settings
        plain.gatewayURL = "http://gateway.example.com/sms"
        let unsafe = try await check(plain.yaml)
        #expect(unsafe.status == 1, "\(unsafe.output)")
        #expect(unsafe.output.contains("unsafe\tsms.http.url\tplain http:// to gateway.example.com"), "\(unsafe.output)")
        let invalid = try await check(settings.yaml + "\nbogus: 1\n")
        #expect(invalid.status == 78)
    }

    @Test("push.provider none: herald-push-worker stops with exit 78 saying it is not needed; herald-admin runs")
    func noPush() async throws {
        let directory = NSTemporaryDirectory() + "herald-nopush-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var settings = TestConfiguration()
        settings.stateDir = directory
        settings.pushProvider = "none"
        let path = directory + "/herald.yaml"
        try settings.yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let worker = try HeraldProcess("herald-push-worker", arguments: ["--config", path], logDirectory: directory)
        #expect(await worker.waitForExit(timeout: .seconds(20)) == 78)
        #expect(worker.output.contains("push.provider is none"), "\(worker.output)")
        let admin = try HeraldProcess("herald-admin", arguments: ["store", "status", "--config", path], logDirectory: directory)
        #expect(await admin.waitForExit(timeout: .seconds(20)) == 0, "\(admin.output)")
    }

    @Test("herald-api's /metrics: requests and their duration by route template, method and status; known counters start at 0")
    func requestMetrics() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            let metricsClient = HeraldClient(port: stack.settings.apiMetricsPort)
            let before = String(decoding: try await metricsClient.get("/metrics").body, as: UTF8.self)
            let project = TestConfiguration.projectID
            #expect(Self.sample(before, #"herald_api_sign_ins_total{project="\#(project)",outcome="ok"}"#) == 0, "\(before)")
            #expect(Self.sample(before, #"herald_api_limit_refusals_total{project="\#(project)",limit="limits.perNumber"}"#) == 0)
            _ = try await stack.sendCode(to: "+15555550100")
            for index in 0..<3 { _ = try await stack.client.get("/no/such/path/\(index)") }
            let after = String(decoding: try await metricsClient.get("/metrics").body, as: UTF8.self)
            let sends = after.split(separator: "\n").filter {
                $0.hasPrefix("herald_api_requests_total{") && $0.contains(#"route="/v1/{operation}""#) && $0.contains(#"method="POST""#)
                    && $0.contains(#"status="200""#)
            }
            #expect(sends.count == 1 && sends.first.map { $0.hasSuffix(" 1") } == true, "\(sends)")
            #expect(after.contains(#"herald_api_requests_total{route="NotFound",method="GET",status="404"} 3"#), "\(after)")
            #expect(after.contains("herald_api_request_duration_seconds_bucket{route=\"/v1/{operation}\""))
        }
    }

}
