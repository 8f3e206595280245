import ArgumentParser
import Foundation
import HeraldAMQP
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Logging
import Synchronization

/// What every suite may tune: one set of options, shared by the subcommands (`HeraldBenchCommand`), each
/// of which reads the ones it needs.
struct Bench: ParsableArguments {
    @Option(help: "Messages for the raw publish-with-confirms run.") var publishCount = 20_000
    @Option(help: "Confirms in flight during the raw publish run.") var window = 500
    @Option(help: "Seconds of load at concurrency 64.") var throughputSeconds = 10
    @Option(help: "Requests per second for the latency run.") var rate = 500
    @Option(help: "Seconds of the latency run.") var latencySeconds = 10
    @Option(help: "Seconds of the failover run (at --rate sends/s).") var failoverSeconds = 20
    @Option(help: "Seconds the failover run's primary answers 503, from the middle of the run.") var failoverOutage = 5
    @Option(help: "Pushes for the multiplexed APNs run (a fifth of it one at a time).") var pushCount = 5_000
    @Option(parsing: .upToNextOption, help: "Streams in flight for the multiplexed APNs runs.") var pushStreams: [Int] = [64]
    @Option(help: "Decisions per limiter run.") var decisions = 20_000
    @Option(help: "Sign-in mails rendered in the email run.") var emailCount = 5_000
    @Option(help: "Of those, mails submitted over SMTP (per concurrency level).") var emailSubmissions = 800
    @Option(help: "Stores for the spine and limits suites: sqlite, postgres or both (side by side, plus two herald-api on PostgreSQL).")
    var store = "both"
    @Option(help: "Jobs queued before one herald-sms-worker starts draining (worker suite).") var backlog = 50_000
    @Option(help: "Sessions and waiting jobs of the last hour written before the store suite times operators' scans beside a write.")
    var reportRows = 200_000
    @Option(help: "Expired sessions each purge pass of the store suite deletes while writes go on (a minute's at 2,000 sends/s by default).")
    var purgeRows = 120_000
    @Option(
        help: "The draining worker's concurrency and prefetch (workers.sms.concurrency and prefetch; deploy/config/herald-worker.yaml ships 192).")
    var workerConcurrency = BenchStack.deployInFlight
    @Option(help: "How long the fake gateway takes to answer each SMS in the worker suite, in milliseconds (a real provider: 100–500).")
    var gatewayLatency = 0
    @Option(help: "Runs of the performance suite; its table prints medians with ranges.") var runs = 3
    @Option(help: "Where the profile suite keeps its perf data (for perf report -g).") var perfData = "herald-api.perf.data"
    @Option(help: "Store of the profile, instructions and both pair suites: sqlite or postgres.") var profileStore = "sqlite"
    @Option(help: "Sends counted in each run of the instructions suite (after \(Bench.warmUpSends) not counted).")
    var instructionSends = 2_000
    @Option(
        help:
            "Where the instructions suite keeps its callgrind dumps (DIR/herald-api, DIR/herald-sms-worker; one per run, for callgrind_annotate); by default they are removed."
    )
    var callgrindDir: String?
    @Option(
        name: .customLong("limits"),
        help:
            "The limits section (YAML flow) of every run with limits (performance, limits, profile, pair): by default every kind of limit is spent and none refuses; for example add 'pumping: {enabled: false}' or 'leasing: {above: 0}' to see what one part costs."
    )
    var measuredLimitsSection = Bench.measuredLimits
    @Option(
        help:
            "The pair suite's limits for the baseline stack (default: --limits): with --baseline-bin .build/release, the same build with and without a part of its limits, loaded at the same time."
    )
    var baselineLimits: String?
    @Option(
        help:
            "The pair suites' other build: a directory holding its herald-api and herald-sms-worker (for example a copy of another commit's .build/release)."
    )
    var baselineBin: String?
    @Option(
        help:
            "Rows written into this build's store before the pair and profile suites load it: sessions of the last day, ledger rows of the last 30 days and the live limit keys of that many numbers (a store in service; with --baseline-bin .build/release the pair suite sets it against a fresh one)."
    )
    var prefill = 0

    /// The stack variants the spine suite measures, in print order.
    var variants: [(label: String, store: TestStore, apis: Int)] {
        var result: [(String, TestStore, Int)] = []
        if store != "postgres" { result.append(("sqlite", .sqlite, 1)) }
        if store != "sqlite" {
            result.append(("postgres", .postgres, 1))
            result.append(("postgres, 2 APIs", .postgres, 2))
        }
        return result
    }

    /// Limits that spend state on every send (every kind, pumping counted) but refuse nothing.
    static let measuredLimits =
        #"{perNumber: ["5/1h", "10/1d"], perIP: ["1000000/1s"], perProject: ["1000000/1s"], perCountry: ["1000000/1s"], perPrefix: ["1000000/1s"], pumping: {enabled: true, minimumSends: 1000000}}"#
    static let noLimits = #"{perNumber: [], perIP: [], perProject: [], checksPerNumber: [], pumping: {enabled: false}}"#

    /// The line every suite opens with.
    func header() {
        print("herald-bench on \(ProcessInfo.processInfo.activeProcessorCount) cores; broker \(TestBroker.endpoint.redacted)")
    }

    var profileKind: TestStore { profileStore == "postgres" ? .postgres : .sqlite }

    /// Raw publish with confirms, then per store: API throughput, latency and memory.
    func spine() async throws {
        try await rawPublish()
        let summary = Summary()
        for variant in variants {
            print("— store: \(variant.label)")
            let stack = try await BenchStack.start(limits: Self.noLimits, store: variant.store, apis: variant.apis)
            do {
                let (_, perSecond, cpu) = try await throughput(stack)
                let answer = try await latency(stack, label: "(c)")
                print(
                    "(d) memory after the runs: herald-api RSS \(stack.apis.map { rss($0.pid) }.joined(separator: ", ")) (peak \(stack.apis.map { peak($0.pid) }.joined(separator: ", "))); herald-sms-worker RSS \(rss(stack.worker.pid)) (peak \(peak(stack.worker.pid)))"
                )
                summary.add(variant.label, perSecond: perSecond, apiCPU: cpu, p50: answer.p50, p99: answer.p99)
            } catch {
                await stack.stop()
                throw error
            }
            await stack.stop()
        }
        summary.print()
    }

    /// One herald-sms-worker draining a backlog, per store.
    func workerSuite() async throws {
        for variant in variants where variant.apis == 1 {
            _ = try await workerDrain(variant.store, label: variant.label)
        }
    }

    /// The provider rate, then per-number spacing, handing jobs out.
    func throttleSuite() async throws {
        _ = try await throttling(rate: "10/1s burst 1", jobs: 200, spacing: "0s")
        _ = try await throttling(rate: "1000000/1s", jobs: 200, spacing: "3s", numbers: 50)
    }

    /// One admission at a time against each store; on SQLite, operators' scans beside a write.
    func storeSuite() async throws {
        for variant in variants where variant.apis == 1 {
            let url = try variant.store.freshURL() ?? "sqlite:\(NSTemporaryDirectory())herald-bench-\(UUID().uuidString.prefix(8)).sqlite"
            let store = try await SQLStore.open(
                .init(url: url, location: try StoreLocation(parsing: url), poolSize: 16), logger: Logger(label: "bench"))
            try await admissionRoundTrips(store, kind: variant.store)
            // PostgreSQL's reads and writes each take a pool connection; SQLite's writes are one queue.
            if variant.store == .sqlite { try await operatorReadStalls(store, kind: variant.store) }
            await store.close()
            await TestStore.dropSchema(of: url)
            if url.hasPrefix("sqlite:") {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: String(url.dropFirst(7)) + suffix) }
            }
        }
    }

    /// Limiter decisions per second, then the answer times with and without admission limits.
    func limitsSuite() async throws {
        for variant in variants where variant.apis == 1 {
            try await limiterDecisions(variant.store)
            var answerTimes: [String: (p50: Double, p99: Double, endToEndP99: Double, disk: DiskSyncWatch.Summary?)] = [:]
            for (label, limits) in [("without limits", Self.noLimits), ("with limits (6 GCRA keys + pumping per send)", measuredLimitsSection)] {
                let stack = try await BenchStack.start(limits: limits, store: variant.store)
                do {
                    answerTimes[label] = try await latency(stack, label: "(l) [\(variant.label)] \(label):")
                } catch {
                    await stack.stop()
                    throw error
                }
                await stack.stop()
            }
            if let off = answerTimes["without limits"], let on = answerTimes.first(where: { $0.key.hasPrefix("with ") })?.value {
                print(
                    String(
                        format: "(l) [%@] added by admission limits: p50 %+.1f ms, p99 %+.1f ms", variant.label, on.p50 - off.p50,
                        on.p99 - off.p99))
            }
        }
    }

    /// Limiter decisions per second against the store: one hot key, and every decision a new key.
    func limiterDecisions(_ kind: TestStore) async throws {
        let directory = NSTemporaryDirectory() + "herald-bench-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = try kind.freshURL() ?? "sqlite:\(directory)/herald.sqlite"
        let store = try await SQLStore.open(
            .init(url: url, location: try StoreLocation(parsing: url), poolSize: 16), logger: Logger(label: "bench"))
        defer {
            Task {
                await store.close()
                await TestStore.dropSchema(of: url)
            }
        }
        let parameters = GCRA.Parameters(RatePolicy.parse("1000/1s burst 100")!)
        let runs: [(String, @Sendable (Int) -> String)] = [
            ("one hot key", { _ in "number:bench:+15555550100|1000/1s" }),
            ("a new key each time", { index in "number:bench:+1555\(2_000_000 + index)|1000/1s" }),
        ]
        for (label, keyFor) in runs {
            let allowed = Locked(0)
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        for index in stride(from: worker, to: decisions, by: 16) {
                            let decision = try await store.rateDecision(key: keyFor(index), parameters: parameters, now: Date().microsecondsSince1970)
                            if decision.allowed { allowed.withLock { $0 += 1 } }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let seconds = (ContinuousClock.now - started).seconds
            print(
                String(
                    format: "(l) limiter on %@, %@: %d decisions in %.2f s = %.0f decisions/s (%d allowed)", kind.rawValue, label, decisions, seconds,
                    Double(decisions) / seconds, allowed.withLock { $0 }))
        }
        try await admissionRoundTrips(store, kind: kind)
    }

    /// One send's whole store work (`admitSend`: six limits, pumping count, session, ledger row), one
    /// call at a time: the store's own share of an answer, without queueing behind other sends.
    func admissionRoundTrips(_ store: SQLStore, kind: TestStore) async throws {
        let policy = RatePolicy.parse("1000000/1s")!
        let pumping = PrefixVelocity.Settings(enabled: true, window: .seconds(3600), multiple: 10, minimumSends: 1_000_000, blockFor: .seconds(3600))
        var times: [Double] = []
        for index in 0..<2000 {
            let now = Date()
            let phone = "+1555\(3_000_000 + index)"
            let checks = [
                LimitCheck(kind: .ip, scope: "bench", subject: "203.0.113.7", policy: policy),
                LimitCheck(kind: .number, scope: "bench", subject: phone, policy: policy),
                LimitCheck(kind: .number, scope: "bench", subject: phone, policy: RatePolicy.parse("100/1d")!),
                LimitCheck(kind: .project, scope: "bench", subject: "bench", policy: policy),
                LimitCheck(kind: .country, scope: "bench", subject: "US", policy: policy),
                LimitCheck(kind: .prefix, scope: "bench", subject: "+1555", policy: policy),
            ]
            let session = VerificationSession(
                id: UUID().uuidString, projectID: "bench", phoneNumber: phone, region: "US", codeHash: Data(repeating: 7, count: 32), createdAt: now,
                expiresAt: now.addingTimeInterval(600), maxAttempts: 5, jobID: UUID())
            let started = ContinuousClock.now
            let verdict = try await store.admitSend(SendAdmission(session: session, prefix: "+1555", limits: checks, pumping: pumping, now: now))
            times.append((ContinuousClock.now - started).seconds * 1000)
            guard verdict == .admitted else { throw TestFailure("admission \(index) was \(verdict)") }
        }
        times.sort()
        print(
            String(
                format: "(l) one admission at a time on %@ (6 limits, pumping, session, ledger row, commit): p50 %.2f ms, p99 %.2f ms",
                kind.rawValue, times[times.count / 2], times[times.count * 99 / 100]))
    }

    /// (a) One librabbitmq publisher, persistent messages to a quorum queue, `window` confirms in flight.
    func rawPublish() async throws {
        let topology = TestBroker.topology(exchange: TestBroker.uniqueExchange("bench"))
        try await TestBroker.withTopology(topology) { _ in
            let publisher = try await TestBroker.connection(.publisher, name: "bench", logger: quietLogger(), publishTimeout: .seconds(30))
            let body = Data(repeating: UInt8(ascii: "x"), count: 400)
            for (label, inFlight) in [("1 in flight (one round trip each)", 1), ("\(window) in flight", window)] {
                let count = inFlight == 1 ? min(publishCount, 2000) : publishCount
                let seconds = try await Self.publish(count, inFlight: inFlight, body: body, to: topology.exchange, on: publisher)
                print(
                    String(
                        format: "(a) raw publish with confirms, %@: %d messages in %.2f s = %.0f msg/s", label, count, seconds,
                        Double(count) / seconds))
            }
            await publisher.shutdown()
        }
    }

    /// Publishes `count` messages with at most `inFlight` confirms outstanding; returns the seconds taken.
    static func publish(_ count: Int, inFlight: Int, body: Data, to exchange: String, on publisher: AMQPConnection) async throws -> Double {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                if index >= inFlight { try await group.next() }
                group.addTask {
                    try await publisher.publish(AMQPOutgoingMessage(exchange: exchange, routingKey: "sms", body: body, messageID: "m\(index)"))
                }
            }
            try await group.waitForAll()
        }
        return (ContinuousClock.now - started).seconds
    }

    /// (b) sendVerificationCode answered per second with 64 requests always in flight (spread over the
    /// stack's APIs), and herald-api's CPU time (user + system, from /proc) per accepted send.
    func throughput(_ stack: BenchStack) async throws -> (accepted: Int, perSecond: Double, apiCPU: Double) {
        let cpuBefore = stack.apis.map { cpuSeconds($0.pid) }.reduce(0, +)
        let (ok, failed, seconds) = try await closedLoop { worker, index in
            try await stack.clients[worker % stack.clients.count].post(
                "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey,
                json: ["phoneNumber": BenchStack.phone(worker * 100_000 + index)]
            ).status == 200
        }
        let cpu = (stack.apis.map { cpuSeconds($0.pid) }.reduce(0, +) - cpuBefore) / Double(max(ok, 1)) * 1_000_000
        print(
            String(
                format:
                    "(b) sendVerificationCode at concurrency 64: %d accepted in %.1f s = %.0f req/s (%d refused); herald-api CPU %.0f µs per send",
                ok, seconds, Double(ok) / seconds, failed, cpu))
        // Let the worker drain before the latency run.
        _ = await eventually(timeout: .seconds(120)) { stack.gateway.receivedCount >= ok }
        print("    worker drained: gateway received \(stack.gateway.receivedCount) SMS")
        return (ok, Double(ok) / seconds, cpu)
    }

    /// (e) `backlog` jobs queued through the API while no worker runs; then one herald-sms-worker
    /// drains them against a gateway that answers at once (or after `--gateway-latency`): jobs/s and the
    /// worker's CPU per job.
    @discardableResult
    func workerDrain(_ kind: TestStore, label: String) async throws -> (
        perSecond: Double, cpuPerJob: Double, peakMiB: Double, cpuShares: [(String, Double)], disk: DiskSyncWatch.Summary?
    ) {
        let stack = try await BenchStack.start(limits: Self.noLimits, store: kind, worker: false, workerInFlight: workerConcurrency)
        do {
            let started = ContinuousClock.now
            try await queueBacklog(stack, offset: 20_000_000)
            print(String(format: "(e) [%@] backlog of %d queued in %.1f s", label, backlog, (ContinuousClock.now - started).seconds))
            if gatewayLatency > 0 {
                stack.gateway.setFallback(FakeSMSGateway.Reply(status: 200, body: #"{"status":"queued"}"#, delay: .milliseconds(gatewayLatency)))
            }
            let worker = try stack.startWorker()
            // What else works while the worker drains: the store, the broker, the fake gateway, the machine.
            let watch = CPUWatch([
                ("herald-sms-worker", { [worker.pid] }), ("RabbitMQ", { ProcessCPU.pids(named: "beam.smp") }),
                ("PostgreSQL", { ProcessCPU.pids(named: "postgres") }), ("herald-bench (fake gateway)", { [getpid()] }),
            ])
            let drainStart = ContinuousClock.now
            // Every claim and outcome is a durable write: a drain that stalls may be the disk's doing.
            let diskWatch = DiskSyncWatch()
            let drainedAll = await eventually(timeout: .seconds(600)) { stack.gateway.receivedCount >= backlog }
            let disk = diskWatch.stop()
            guard drainedAll else {
                throw TestFailure("the worker did not drain the backlog: \(stack.gateway.receivedCount) of \(backlog)")
            }
            let seconds = (ContinuousClock.now - drainStart).seconds
            let cpu = cpuSeconds(worker.pid)
            let shares = watch.used().shares
            let result = (Double(backlog) / seconds, cpu / Double(backlog) * 1_000_000, Self.mebibytes(peak(worker.pid)), shares, disk)
            print(
                String(
                    format:
                        "(e) [%@] one herald-sms-worker (%d in flight, gateway answering in %d ms) drained %d jobs in %.1f s = %.0f jobs/s; worker CPU %.0f µs per job; peak RSS %@ (now: anonymous %@, mapped files %@)",
                    label, workerConcurrency, gatewayLatency, backlog, seconds, Double(backlog) / seconds, cpu / Double(backlog) * 1_000_000,
                    peak(worker.pid),
                    statusField(worker.pid, "RssAnon"), statusField(worker.pid, "RssFile")))
            print("    CPU during the drain: " + shares.map { String(format: "%@ %.0f %%", $0.0, $0.1) }.joined(separator: ", "))
            if let disk { print(disk.line) }
            if let metrics = try? await MetricTotals.read(port: stack.settings.metricsPort) {
                let total = { metrics.total($0) }
                let batches = total("herald_store_batch_seconds_count")
                if batches > 0 {
                    print(
                        String(
                            format:
                                "    store group commit in the worker: %.0f batches of %.1f calls on average, %.2f ms each; busy %.0f %% of the drain",
                            batches, total("herald_store_batch_size_sum") / max(1, total("herald_store_batch_size_count")),
                            total("herald_store_batch_seconds_sum") / batches * 1000, total("herald_store_batch_seconds_sum") / seconds * 100))
                }
            }
            await stack.stop()
            return result
        } catch {
            await stack.stop()
            throw error
        }
    }

    /// Queues `backlog` sends through `stack`'s first herald-api, 64 at a time, to numbers from `offset` on.
    func queueBacklog(_ stack: BenchStack, offset: Int) async throws {
        try await queueSends(backlog, through: stack, offset: offset)
    }

    /// `count` sends through `stack`'s first herald-api, 64 at a time, each to a number of its own from
    /// `offset` on; throws at the first one not accepted (the bench's limits refuse nothing).
    func queueSends(_ count: Int, through stack: BenchStack, offset: Int) async throws {
        try await makeRequests(count, named: "sendVerificationCode", expecting: 200) { index in
            try await stack.client.post(
                "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": BenchStack.phone(offset + index)])
        }
    }

    /// `count` requests, 64 at a time, request `index` (1…count) made by `request`; throws at the first
    /// answer with another status than `expecting`, so a run never counts requests that did other work.
    func makeRequests(
        _ count: Int, named name: String, expecting status: Int, _ request: @escaping @Sendable (Int) async throws -> HeraldClient.Answer
    ) async throws {
        let made = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    while true {
                        let index = made.withLock { made -> Int? in
                            guard made < count else { return nil }
                            made += 1
                            return made
                        }
                        guard let index else { return }
                        let answer = try await request(index)
                        guard answer.status == status else { throw TestFailure("\(name): HTTP \(answer.status), not \(status)") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// (t) Throttling: `jobs` queued one after another while no worker runs, then one worker sends them
    /// under the provider rate `rate`, to `numbers` numbers in turn (fewer numbers than jobs: several
    /// jobs per number, kept `spacing` apart). Prints republishes to throttle queues per throttled job
    /// and, for jobs to distinct numbers, how many left after a job queued later.
    @discardableResult
    func throttling(rate: String, jobs: Int, spacing: String, numbers: Int? = nil) async throws -> (perThrottledJob: Double, overtaken: Int?) {
        let stack = try await BenchStack.start(
            limits: Self.noLimits, worker: false,
            configure: {
                $0.providerRate = rate
                $0.perNumberSpacing = spacing
            })
        do {
            var order: [String] = []
            for index in 0..<jobs {
                let phone = BenchStack.phone(30_000_000 + index % (numbers ?? jobs))
                let answer = try await stack.client.post(
                    "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": phone])
                guard answer.status == 200 else { throw TestFailure("queueing: HTTP \(answer.status)") }
                order.append(phone)
            }
            let started = ContinuousClock.now
            _ = try stack.startWorker()
            guard await eventually(timeout: .seconds(300), { stack.gateway.receivedCount >= jobs }) else {
                throw TestFailure("throttled jobs did not all arrive: \(stack.gateway.receivedCount) of \(jobs)")
            }
            let seconds = (ContinuousClock.now - started).seconds
            let metrics = try await MetricTotals.read(port: stack.settings.metricsPort)
            let counter = { metrics.total($0, containing: $1) }
            let parked = counter("herald_worker_jobs_total", #"outcome="throttled""#)
            // Jobs that had to wait: with spacing, every job after the first to its number; with the
            // provider rate alone, every job beyond the burst.
            let throttled = numbers.map { jobs - $0 } ?? jobs - 1
            var overtakenCount: Int?
            var line = String(
                format:
                    "(t) rate %@, spacing %@, %d jobs to %d numbers: sent in %.1f s; %.0f republished to throttle queues = %.2f per throttled job",
                rate, spacing, jobs, numbers ?? jobs, seconds, parked, parked / Double(max(1, throttled)))
            if numbers == nil {
                let rank = Dictionary(order.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
                var highest = -1
                var overtaken = 0
                for index in stack.gateway.received.compactMap({ $0.to.flatMap { rank[$0] } }) {
                    if index < highest { overtaken += 1 }
                    highest = max(highest, index)
                }
                line += "; \(overtaken) of \(jobs) left after a job queued later"
                overtakenCount = overtaken
            } else {
                let byNumber = Dictionary(grouping: stack.gateway.received, by: { $0.to ?? "" })
                let gaps = byNumber.values.flatMap { received -> [Double] in
                    let times = received.map(\.arrivedAt.timeIntervalSince1970).sorted()
                    return zip(times, times.dropFirst()).map { $1 - $0 }
                }
                line += String(format: "; closest two SMS to one number: %.2f s apart", gaps.min() ?? .nan)
            }
            print(line)
            await stack.stop()
            return (parked / Double(max(1, throttled)), overtakenCount)
        } catch {
            await stack.stop()
            throw error
        }
    }

    /// User + system CPU seconds a process has used (/proc/<pid>/stat, clock ticks of 1/100 s).
    func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: end)...].split(separator: " ")
        // After the command name: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// 64 clients sending back to back for `throughputSeconds`; `request` says whether one was accepted.
    func closedLoop(
        _ request: @escaping @Sendable (_ worker: Int, _ index: Int) async throws -> Bool
    ) async throws -> (ok: Int, failed: Int, seconds: Double) {
        let deadline = ContinuousClock.now + .seconds(throughputSeconds)
        let counter = Locked((ok: 0, failed: 0))
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<64 {
                group.addTask {
                    var index = 0
                    while ContinuousClock.now < deadline {
                        let accepted = try await request(worker, index)
                        counter.withLock {
                            if accepted { $0.ok += 1 } else { $0.failed += 1 }
                        }
                        index += 1
                    }
                }
            }
            try await group.waitForAll()
        }
        let (ok, failed) = counter.withLock { ($0.ok, $0.failed) }
        return (ok, failed, (ContinuousClock.now - started).seconds)
    }

    /// (c) Open-loop load at a fixed rate: time from the request to the gateway's receipt, and to the
    /// API's answer (returned as p50/p99 in ms).
    func latency(_ stack: BenchStack, label: String) async throws -> (
        p50: Double, p99: Double, endToEndP99: Double, disk: DiskSyncWatch.Summary?
    ) {
        let total = rate * latencySeconds
        let base = 50_000_000
        let answered = Locked([String: (requested: ContinuousClock.Instant, confirmed: ContinuousClock.Instant)]())
        let arrivalsBefore = stack.gateway.receivedCount
        let stagesBefore = await Self.sendStages(stack)
        let interval = Duration.seconds(1) / rate
        let start = ContinuousClock.now
        let refused = Locked(0)
        let diskWatch = DiskSyncWatch()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                try? await Task.sleep(until: start + interval * index)
                let phone = BenchStack.phone(base + index)
                group.addTask {
                    let requested = ContinuousClock.now
                    let answer = try? await stack.clients[index % stack.clients.count].post(
                        "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": phone])
                    if answer?.status == 200 {
                        answered.withLock { $0[phone] = (requested, .now) }
                    } else {
                        refused.withLock { $0 += 1 }
                    }
                }
            }
        }
        let sentIn = (ContinuousClock.now - start).seconds
        let disk = diskWatch.stop()
        _ = await eventually(timeout: .seconds(60)) { stack.gateway.receivedCount - arrivalsBefore >= answered.withLock { $0.count } }
        let arrivals = stack.arrivalInstants()
        // From the request leaving the client (the API then publishes and waits for the confirm) to the
        // SMS reaching the gateway; and the API's own answer time. The worker often gets the job before
        // the client has the API's answer, so "answer → gateway" alone would be meaningless.
        var endToEnd: [Double] = []
        var answerTimes: [Double] = []
        for (phone, times) in answered.withLock({ $0 }) {
            answerTimes.append((times.confirmed - times.requested).seconds * 1000)
            if let arrived = arrivals[phone] { endToEnd.append((arrived - times.requested).seconds * 1000) }
        }
        print(
            String(
                format: "%@ at %d req/s for %d s (offered in %.1f s): %d confirmed, %d refused",
                label, rate, latencySeconds, sentIn, answerTimes.count, refused.withLock { $0 }))
        print(
            String(
                format: "    request → SMS at gateway: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d delivered)",
                Self.percentile(endToEnd, 0.5), Self.percentile(endToEnd, 0.99), endToEnd.max() ?? .nan, endToEnd.count))
        print(
            String(
                format: "    request → API answer (after the broker's confirm): p50 %.1f ms, p99 %.1f ms",
                Self.percentile(answerTimes, 0.5), Self.percentile(answerTimes, 0.99)))
        if let disk { print(disk.line) }
        if let before = stagesBefore, let after = await Self.sendStages(stack) {
            func mean(_ name: String) -> Double {
                let count = (after[name + "_count"] ?? 0) - (before[name + "_count"] ?? 0)
                return count > 0 ? ((after[name + "_sum"] ?? 0) - (before[name + "_sum"] ?? 0)) / count * 1000 : .nan
            }
            print(
                String(
                    format: "    inside herald-api%@ (means): store admission %.2f ms, broker confirm %.2f ms",
                    stack.apis.count > 1 ? " (the first)" : "", mean("herald_api_admission_seconds"),
                    mean("herald_api_publish_confirm_seconds")))
        }
        return (Self.percentile(answerTimes, 0.5), Self.percentile(answerTimes, 0.99), Self.percentile(endToEnd, 0.99), disk)
    }

    /// The value a fraction `p` of the way up `values` (NaN for none): the bench's one percentile rule.
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// The `_sum` and `_count` lines of herald-api's send-stage timers (the first API's /metrics), to
    /// say where an answer's time goes; nil if the metrics cannot be read.
    static func sendStages(_ stack: BenchStack) async -> [String: Double]? {
        guard let answer = try? await HeraldClient(port: stack.apiMetricsPorts[0]).get("/metrics"), answer.status == 200 else { return nil }
        var values: [String: Double] = [:]
        for line in String(decoding: answer.body, as: UTF8.self).split(separator: "\n")
        where line.hasPrefix("herald_api_admission_seconds_") || line.hasPrefix("herald_api_publish_confirm_seconds_") {
            let name = line.prefix { $0 != "{" && $0 != " " }
            guard name.hasSuffix("_sum") || name.hasSuffix("_count"), let value = Double(line.split(separator: " ").last ?? "") else { continue }
            values[String(name), default: 0] += value
        }
        return values
    }

    func rss(_ pid: Int32) -> String { statusField(pid, "VmRSS") }
    func peak(_ pid: Int32) -> String { statusField(pid, "VmHWM") }

    func statusField(_ pid: Int32, _ field: String) -> String {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return "?" }
        let kilobytes = Double(line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0)
        return String(format: "%.0f MiB", kilobytes / 1024)
    }
}

/// herald-api (one or more) and herald-sms-worker processes with a fast in-process gateway, on SQLite or
/// on a fresh schema of the bench's PostgreSQL.
struct BenchStack: Sendable {
    let settings: TestConfiguration
    let gateway: FakeSMSGateway
    let apis: [HeraldProcess]
    let workers: Locked<[HeraldProcess]>
    var worker: HeraldProcess { workers.withLock { $0[0] } }
    let configPath: String
    /// Jobs each herald-sms-worker has in flight (its concurrency and prefetch).
    let workerInFlight: Int
    /// Where its executables are (another build's, in the pair suites); nil: this build's.
    let binDirectory: String?
    let clients: [HeraldClient]
    let apiPorts: [Int]
    /// Each herald-api's metrics listener (the worker has the configuration's `metricsPort`).
    let apiMetricsPorts: [Int]
    var client: HeraldClient { clients[0] }
    /// Gateway arrivals by destination, with monotonic timestamps.
    let arrivals: ArrivalClock

    final class ArrivalClock: Sendable {
        let wallToMonotonic: (Date, ContinuousClock.Instant) = (Date(), ContinuousClock.now)
        func instant(for date: Date) -> ContinuousClock.Instant {
            wallToMonotonic.1 + .milliseconds(Int64(date.timeIntervalSince(wallToMonotonic.0) * 1000))
        }
    }

    /// `workers.sms.concurrency` and `prefetch` in deploy/config/herald-worker.yaml: the bench's workers
    /// run with what ships unless `--worker-concurrency` says otherwise.
    static let deployInFlight = 192

    /// Workers run with deploy/config/herald-worker.yaml's pool and parallelism (`deployInFlight` jobs in
    /// flight unless `--worker-concurrency` says otherwise): claims and outcomes travel in batches, so a few
    /// connections suffice (each idle one costs memory).
    static func workerEnvironment(inFlight: Int) -> [String: String] {
        ["HERALD_STORE_POOL_SIZE": "4", "HERALD_WORKERS_SMS_PREFETCH": String(inFlight), "HERALD_WORKERS_SMS_CONCURRENCY": String(inFlight)]
    }

    static func phone(_ index: Int) -> String {
        // +1 555 2xx xxxx … +1 555 9xx xxxx: valid NANP, distinct per index.
        let exchange = 2_000_000 + index % 8_000_000
        return "+1555\(exchange)"
    }

    static func start(
        limits: String, store: TestStore = .sqlite, apis count: Int = 1, worker startsWorker: Bool = true,
        workerInFlight: Int = BenchStack.deployInFlight, binDirectory: String? = nil, apiLauncher: [String] = [],
        readyTimeout: Duration = .seconds(30), configure: (inout TestConfiguration) -> Void = { _ in }
    ) async throws -> BenchStack {
        // Another build's executables by absolute path (the pair suite), else this build's.
        func executable(_ name: String) -> String { binDirectory.map { "\($0)/\(name)" } ?? name }
        let gateway = try await FakeSMSGateway.start()
        var settings = TestConfiguration()
        settings.storeURL = try store.freshURL()
        settings.gatewayURL = gateway.url
        settings.apiPort = freePort()
        settings.metricsPort = freePort()
        settings.concurrency = 64
        settings.prefetch = 64
        settings.logLevel = "warning"
        settings.codeTTL = "10m"
        settings.limits = limits
        settings.providerRate = "1000000/1s"
        configure(&settings)
        let path = try settings.write()
        var apis: [HeraldProcess] = []
        var clients: [HeraldClient] = []
        var metricsPorts: [Int] = []
        for index in 0..<count {
            let port = index == 0 ? settings.apiPort : freePort()
            metricsPorts.append(freePort())
            // `apiLauncher`: a program that runs herald-api (its absolute path last), valgrind in the instructions suite.
            apis.append(
                try HeraldProcess(
                    apiLauncher.first ?? executable("herald-api"), arguments: apiLauncher.dropFirst() + ["--config", path],
                    logDirectory: settings.stateDir,
                    environment: ["HERALD_HTTP_PORT": String(port), "HERALD_HTTP_METRICS_PORT": String(metricsPorts[index])]))
            clients.append(HeraldClient(port: port))
        }
        let workers = Locked([HeraldProcess]())
        if startsWorker {
            let worker = try HeraldProcess(
                executable("herald-sms-worker"), arguments: ["--config", path], logDirectory: settings.stateDir,
                environment: Self.workerEnvironment(inFlight: workerInFlight))
            workers.withLock { $0.append(worker) }
        }
        let stack = BenchStack(
            settings: settings, gateway: gateway, apis: apis, workers: workers, configPath: path, workerInFlight: workerInFlight,
            binDirectory: binDirectory, clients: clients,
            apiPorts: clients.compactMap { Int($0.baseURL.split(separator: ":").last ?? "") }, apiMetricsPorts: metricsPorts,
            arrivals: ArrivalClock())
        for (api, client) in zip(apis, clients) {
            guard await eventually(timeout: readyTimeout, { (try? await client.get("/readyz"))?.status == 200 }) else {
                // Stop what started (the worker too), or it keeps running, holding CPU the next run measures.
                let output = api.output.suffix(2000)
                await stack.stop()
                throw TestFailure("herald-api did not start:\n\(output)")
            }
        }
        try await Task.sleep(for: .seconds(1))
        return stack
    }

    func arrivalInstants() -> [String: ContinuousClock.Instant] {
        var result: [String: ContinuousClock.Instant] = [:]
        for request in gateway.received {
            if let to = request.to { result[to] = arrivals.instant(for: request.arrivedAt) }
        }
        return result
    }

    /// Starts a herald-sms-worker (the first, when the stack started without one); `launcher` as
    /// `start`'s `apiLauncher` (valgrind in the instructions suite).
    func startWorker(launcher: [String] = []) throws -> HeraldProcess {
        let worker = try HeraldProcess(
            launcher.first ?? binDirectory.map { "\($0)/herald-sms-worker" } ?? "herald-sms-worker",
            arguments: launcher.dropFirst() + ["--config", configPath],
            logDirectory: settings.stateDir,
            environment: Self.workerEnvironment(inFlight: workerInFlight))
        workers.withLock { $0.append(worker) }
        return worker
    }

    func stop() async {
        for worker in workers.withLock({ $0 }) { await worker.terminate() }
        for api in apis { await api.terminate() }
        await gateway.stop()
        if let url = settings.storeURL { await TestStore.dropSchema(of: url) }
        let topology = Topology(configuration: try! settings.parsed())
        if let admin = try? await TestBroker.connection(.publisher, logger: quietLogger()) {
            try? await admin.perform { try topology.delete(on: $0) }
            await admin.shutdown()
        }
        try? FileManager.default.removeItem(atPath: settings.stateDir)
    }
}

/// A value behind a lock that closures can share.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// The spine figures of every store variant, printed side by side at the end of the run.
final class Summary: Sendable {
    private let rows = Mutex<[(label: String, perSecond: Double, apiCPU: Double, p50: Double, p99: Double)]>([])

    func add(_ label: String, perSecond: Double, apiCPU: Double, p50: Double, p99: Double) {
        rows.withLock { $0.append((label, perSecond, apiCPU, p50, p99)) }
    }

    func print() {
        let rows = self.rows.withLock { $0 }
        guard rows.count > 1 else { return }
        func line(_ title: String, _ values: [String]) -> String {
            title.padding(toLength: 44, withPad: " ", startingAt: 0) + values.map { $0.padding(toLength: 20, withPad: " ", startingAt: 0) }.joined()
        }
        Swift.print("\nside by side (same run):")
        Swift.print(line("", rows.map(\.label)))
        Swift.print(line("accepted sends/s at concurrency 64", rows.map { String(format: "%.0f", $0.perSecond) }))
        Swift.print(line("herald-api CPU per send (µs, all APIs)", rows.map { String(format: "%.0f", $0.apiCPU) }))
        Swift.print(line("API answer p50 / p99 at the fixed rate (ms)", rows.map { String(format: "%.1f / %.1f", $0.p50, $0.p99) }))
    }
}
