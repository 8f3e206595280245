import Foundation
import HeraldAMQP
import HeraldCore
import HeraldTesting
import Testing

/// deploy/monitoring against the real tools: promtool checks and unit-tests the alert rules, and a
/// real Prometheus server scrapes a running stack, loads the rules, and finds a series of every metric
/// family the dashboard and the alerts use.
@Suite("Monitoring: alert rules, dashboard, a real Prometheus")
struct MonitoringTests {
    static let directory = TestConfiguration.repositoryRoot.appendingPathComponent("deploy/monitoring").path

    @Test("promtool: the alert rules are valid and each fires on the series written for it (and not on healthy ones)")
    func rules() async throws {
        let checked = try await shell("cd \(shellQuoted(Self.directory)) && promtool check rules alerts.yml")
        #expect(checked.contains("SUCCESS: 9 rules found"), "\(checked)")
        let tested = try await shell("cd \(shellQuoted(Self.directory)) && promtool test rules alerts-test.yml")
        #expect(tested.contains("SUCCESS"), "\(tested)")
    }

    @Test("Prometheus scrapes herald-api and a worker, loads the rules, and every dashboard query evaluates")
    func scrape() async throws {
        try await StackHarness.run(configure: {
            $0.smsPrices = "{US: {perSegment: 0.0079, currency: USD}}"
            // One send per number; the third admitted send to a prefix (above minimumSends 2) trips the pumping block.
            $0.limits =
                #"{perNumber: ["1/1h"], perIP: ["1000/1m"], perProject: ["10000/1m"], pumping: {enabled: true, window: 10m, multiple: 2, minimumSends: 2, blockFor: 1h}}"#
        }) { stack in
            try await stack.startAPI()
            let workerPort = freePort()
            try await stack.startWorker(metricsPort: workerPort, environment: ["HERALD_WORKERS_SMS_QUEUE_POLL_INTERVAL": "200ms"])
            stack.gateway.script([FakeSMSGateway.Reply(status: 503)])
            _ = try await stack.sendCode(to: "+15555550401")
            _ = try await stack.sendCode(to: "+15555550402")
            let again = try await stack.client.post(
                "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": "+15555550401"])
            #expect(again.status == 400, "per-number limit")
            let tripped = try await stack.client.post(
                "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": "+15555550403"])
            #expect(tripped.errorMessage?.hasPrefix("QUOTA_EXCEEDED") == true, "pumping block: \(tripped.errorMessage ?? "")")
            try await stack.waitForGateway(3)
            // A second herald-api: its start-up housekeeping publishes the conversion of the sends above.
            let secondMetrics = freePort()
            _ = try await stack.startAnotherAPI(metricsPort: secondMetrics)

            let home = stack.settings.stateDir + "/prometheus"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Self.directory + "/alerts.yml", toPath: home + "/alerts.yml")
            let port = freePort()
            try """
            global: {scrape_interval: 1s, evaluation_interval: 1s}
            rule_files: [alerts.yml]
            scrape_configs:
              - job_name: herald-api
                static_configs: [{targets: ["127.0.0.1:\(stack.settings.apiMetricsPort)", "127.0.0.1:\(secondMetrics)"]}]
              - job_name: herald-workers
                static_configs: [{targets: ["127.0.0.1:\(workerPort)"]}]
            """.write(toFile: home + "/prometheus.yml", atomically: true, encoding: .utf8)
            _ = try await shell(
                "cd \(shellQuoted(home)) && setsid prometheus --config.file=prometheus.yml --storage.tsdb.path=data "
                    + "--web.listen-address=127.0.0.1:\(port) > prometheus.log 2>&1 & echo $! > \(shellQuoted(home + "/pid"))")
            defer {
                _ = try? FileManager.default.contents(atPath: home + "/pid").map {
                    kill(pid_t(String(decoding: $0, as: UTF8.self).trimmed) ?? 0, SIGTERM)
                }
            }
            let prometheus = HeraldClient(port: port)
            #expect(await eventually(timeout: .seconds(30)) { (try? await prometheus.get("/-/ready"))?.status == 200 })

            func query(_ expression: String) async throws -> (status: String, results: Int) {
                let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
                let answer = try await prometheus.get("/api/v1/query?query=\(encoded)").json
                return (answer["status"] as? String ?? "?", ((answer["data"] as? [String: Any])?["result"] as? [Any])?.count ?? 0)
            }
            // One series of every family the dashboard and the alerts read.
            let families = [
                #"herald_api_verification_sends_total{outcome="queued"}"#, #"herald_worker_jobs_total{outcome="sent"}"#,
                "herald_worker_enqueue_to_sent_seconds_bucket", "herald_worker_queue_wait_seconds_bucket", "herald_worker_provider_seconds_count",
                #"herald_queue_messages_ready{queue="\#(stack.topology.workQueue(.sms))"}"#,
                #"herald_queue_consumers{queue="\#(stack.topology.workQueue(.sms))"}"#, "herald_worker_in_flight",
                #"herald_worker_provider_errors_total{provider="http",code="http_503"}"#,
                #"herald_sms_conversion_ratio{provider="http",country="US"}"#,
                #"herald_sms_sent_last_hour{provider="http",country="US"}"#, #"herald_sms_cost_total{country="US",currency="USD"}"#,
                #"herald_sms_segments_total{country="US"}"#, #"herald_api_limit_refusals_total{limit="limits.perNumber"}"#,
                "herald_api_prefix_blocks_total", #"up{job="herald-workers"} == 1"#, "herald_api_admission_seconds_count",
                "herald_api_publish_confirm_seconds_count", "herald_store_oldest_snapshot_seconds",
            ]
            for family in families {
                var found = (status: "", results: 0)
                let seen = await eventually(timeout: .seconds(30)) {
                    found = (try? await query(family)) ?? ("error", 0)
                    return found.results > 0
                }
                #expect(seen, "no series for \(family) (\(found.status))")
            }
            // Every panel's query is valid PromQL on the live server.
            let dashboard = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.directory + "/grafana-dashboard.json")))
                    as? [String: Any])
            let expressions = (dashboard["panels"] as? [[String: Any]] ?? []).flatMap { panel in
                (panel["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }
            }
            #expect(expressions.count >= 14)
            for expression in expressions {
                #expect(try await query(expression).status == "success", "\(expression)")
            }
            // The rules loaded and evaluate without errors.
            let rules = try await prometheus.get("/api/v1/rules").json
            let groups = ((rules["data"] as? [String: Any])?["groups"] as? [[String: Any]]) ?? []
            let loaded = groups.flatMap { ($0["rules"] as? [[String: Any]]) ?? [] }
            #expect(loaded.count == 9)
            #expect(loaded.allSatisfy { ($0["health"] as? String) != "err" }, "\(loaded.map { $0["lastError"] ?? "" })")
        }
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
