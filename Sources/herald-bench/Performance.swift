import Foundation
import HeraldAMQP
import HeraldCore
import HeraldTesting
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The throughput suite (`performance`, part of `make bench`): every figure of the
/// throughput targets, measured `runs` times and printed as one table of medians with their ranges,
/// next to its target and, where one exists, the broker's own ceiling measured in the same run.
extension Bench {
    func performance() async throws {
        let table = Table()
        let driver = Wrk.available ? "wrk (2 threads, 64 connections)" : "herald-bench's own HTTP client (wrk not installed)"
        print("performance: \(runs) runs; load driver: \(driver)")
        try await warnIfBusy()
        for run in 1...runs {
            print("— run \(run) of \(runs)")
            try await brokerCeilings(into: table)
            for variant in variants {
                try await waitForQuietBroker()
                try await apiFigures(variant, into: table)
            }
            for variant in variants where variant.apis == 1 {
                let drained = try await workerDrain(variant.store, label: variant.label)
                table.add("worker: jobs/s draining \(backlog / 1000)k backlog", variant.label, drained.perSecond)
                table.add("worker: CPU µs per job", variant.label, drained.cpuPerJob)
                table.add("worker: peak RSS MiB", variant.label, drained.peakMiB)
                if let disk = drained.disk { table.add("disk: fdatasync max ms during the drain", variant.label, disk.max) }
                for (name, share) in drained.cpuShares { table.add("CPU % during the drain: \(name)", variant.label, share) }
                // Whether the drain is bound by the machine's CPU or by waiting (the group commit's round
                // trips): what every process together spends per job, and the rate that would fill the cores.
                if let machine = drained.cpuShares.first(where: { $0.0 == "whole machine" })?.1, machine > 0 {
                    let perJob = machine / 100 * 1_000_000 / drained.perSecond
                    table.add("whole machine CPU µs per drained job", variant.label, perJob)
                    table.add(
                        "jobs/s these cores carry at that cost, every core busy", variant.label,
                        Double(ProcessInfo.processInfo.activeProcessorCount) * 1_000_000 / perJob)
                }
            }
            let paced = try await throttling(rate: "10/1s burst 1", jobs: 200, spacing: "0s")
            table.add("throttle: republishes per throttled job (provider 10/s)", "sqlite", paced.perThrottledJob)
            table.add("throttle: jobs overtaken by later ones (provider 10/s)", "sqlite", Double(paced.overtaken ?? 0))
            let spaced = try await throttling(rate: "1000000/1s", jobs: 200, spacing: "3s", numbers: 50)
            table.add("throttle: republishes per throttled job (spacing 3 s)", "sqlite", spaced.perThrottledJob)
        }
        // The one figure here the neighbours do not move: compare it across days and builds.
        print("")
        let instructions = try await instructionCounts(listing: 10)
        for count in instructions.perSend { table.add("API: instructions per send (user space, callgrind)", "sqlite", count) }
        for (rung, count) in instructions.rungs { table.add(Self.instructionRow(rung), "sqlite", count) }
        print("")
        for count in try await workerInstructionCounts(listing: 10) {
            table.add("worker: instructions per job (user space, callgrind)", "sqlite", count)
        }
        table.print(targets: Self.targets, variants: variants.map(\.label))
        if Perf.available { try await perfTopTen(perSend: table.median("API: CPU µs per send (user+system)", "sqlite")) }
    }

    /// Each figure's target, as the issue states it.
    static let targets: [String: String] = [
        "API: accepted sends/s, c64, default limits": "≥10,000 SQLite; ≥8,000 PG (2 APIs)",
        "API: CPU µs per send (user+system)": "≤100",
        "API: instructions per send (user space, callgrind)": "—",
        "API: answer p50 ms at 500 req/s": "≤3",
        "API: answer p99 ms at 500 req/s": "—",
        "disk: fdatasync p99 ms beside the 500 req/s runs": "—",
        "disk: fdatasync max ms beside the 500 req/s runs": "—",
        "limits add to p50 ms at 500 req/s": "≤1",
        "limits add to p99 ms at 500 req/s": "≤5",
        "enqueue → gateway p99 ms at 500 req/s": "≤30",
        "worker: jobs/s draining 50k backlog": "≥6,000",
        "worker: CPU µs per job": "—",
        "worker: instructions per job (user space, callgrind)": "—",
        "worker: peak RSS MiB": "<60",
        "disk: fdatasync max ms during the drain": "—",
        "API: peak RSS MiB": "<100",
        "throttle: republishes per throttled job (provider 10/s)": "≤1.2",
        "throttle: republishes per throttled job (spacing 3 s)": "≤1.2",
        "throttle: jobs overtaken by later ones (provider 10/s)": "0 (order kept)",
        "broker: raw publish with confirms, 500 in flight, msg/s": "ceiling",
        "broker: raw consume + ack, msg/s": "ceiling",
        "driver: req/s against /healthz (trivial endpoint)": "ceiling",
        "API: CPU µs per /healthz request (HTTP floor)": "—",
        "API: CPU µs per send refused at its number (no store, no broker)": "—",
        "API: CPU µs per send, no worker running meanwhile": "—",
        "API: CPU µs per send to the test number (session stored, no limits, no job)": "—",
        "API sends/s as a share of raw publish": "—",
        "CPU % during the c64 run: herald-api(s)": "—",
        "CPU % during the c64 run: RabbitMQ": "—",
        "CPU % during the c64 run: PostgreSQL": "—",
        "CPU % during the c64 run: load driver": "—",
        "CPU % during the c64 run: herald-sms-worker": "—",
        "CPU % during the c64 run: herald-bench (fake gateway)": "—",
        "CPU % during the c64 run: whole machine": "—",
        "whole machine CPU µs per accepted send": "—",
        "PostgreSQL during the c64 run: connections executing": "—",
        "PostgreSQL during the c64 run: connections flushing WAL": "—",
        "PostgreSQL during the c64 run: connections waiting for locks": "—",
        "sends/s these cores carry if herald-api cost nothing": "—",
        "CPU % during the drain: herald-sms-worker": "—",
        "CPU % during the drain: RabbitMQ": "—",
        "CPU % during the drain: PostgreSQL": "—",
        "CPU % during the drain: herald-bench (fake gateway)": "—",
        "CPU % during the drain: whole machine": "—",
        "whole machine CPU µs per drained job": "—",
        "jobs/s these cores carry at that cost, every core busy": "—",
    ].merging(SendRung.all.map { (instructionRow($0), "—") }) { listed, _ in listed }

    /// The table's row for a rung's instructions per request.
    static func instructionRow(_ rung: SendRung) -> String { "API: instructions per request \(rung.label) (user space)" }

    /// The broker's ceilings on this machine in this run: one publisher with 500 confirms in flight,
    /// and one consumer acking each message (prefetch 500).
    func brokerCeilings(into table: Table) async throws {
        let topology = TestBroker.topology(exchange: TestBroker.uniqueExchange("ceiling"))
        let count = publishCount
        try await TestBroker.withTopology(topology) { _ in
            let publisher = try await TestBroker.connection(.publisher, name: "ceiling", logger: quietLogger(), publishTimeout: .seconds(30))
            let body = Data(repeating: UInt8(ascii: "x"), count: 400)
            let published = Double(count) / (try await Self.publish(count, inFlight: window, body: body, to: topology.exchange, on: publisher))
            await publisher.shutdown()
            table.add("broker: raw publish with confirms, 500 in flight, msg/s", "broker", published)

            let consumer = try await TestBroker.connection(
                .consumer(queue: topology.workQueue(.sms), prefetch: 500), name: "ceiling", logger: quietLogger())
            let consumeStarted = ContinuousClock.now
            var received = 0
            for await delivery in consumer.deliveries {
                consumer.ack(delivery)
                received += 1
                if received == count { break }
            }
            let consumed = Double(received) / (ContinuousClock.now - consumeStarted).seconds
            await consumer.shutdown()
            table.add("broker: raw consume + ack, msg/s", "broker", consumed)
            print(String(format: "(a) broker ceilings: raw publish with confirms %.0f msg/s; raw consume + ack %.0f msg/s", published, consumed))
        }
    }

    /// Figures from a machine that is already busy mean little: a broker left with hundreds of queues
    /// from killed test runs once took a whole core while idle and halved every figure here. Measures
    /// two idle seconds first and says so when the machine or the broker was not idle.
    func warnIfBusy() async throws {
        let brokerBefore = ProcessCPU.seconds(ProcessCPU.pids(named: "beam.smp"))
        let machineBefore = ProcessCPU.machineBusySeconds()
        try await Task.sleep(for: .seconds(2))
        let broker = (ProcessCPU.seconds(ProcessCPU.pids(named: "beam.smp")) - brokerBefore) / 2 * 100
        let machine = (ProcessCPU.machineBusySeconds() - machineBefore) / 2 * 100
        print(String(format: "idle before the runs: machine %.0f %% busy, RabbitMQ %.0f %%", machine, broker))
        if machine > 25 || broker > 10 {
            print(
                "warning: the machine is not idle; figures will be low. A broker busy while idle often holds queues from killed runs: "
                    + "scripts/broker.sh ctl list_queues name messages")
        }
    }

    /// Waits (up to 20 s) until RabbitMQ uses less than 15 % of a core over half a second. After the
    /// ceiling runs and each variant's drain the broker goes on working for seconds (quorum-queue log
    /// truncation, deleting the variant's queues); a c64 run that started then measured the API with
    /// half a core less (2,886 instead of 4,680 sends/s in the same hour, RabbitMQ at 55 %).
    func waitForQuietBroker() async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let before = ProcessCPU.seconds(ProcessCPU.pids(named: "beam.smp"))
            try await Task.sleep(for: .milliseconds(500))
            if (ProcessCPU.seconds(ProcessCPU.pids(named: "beam.smp")) - before) / 0.5 < 0.15 { return }
        }
        print("warning: RabbitMQ still busy after 20 s; the next figures may be low")
    }

    /// wrk at c64 against `/healthz` for 5 s: the driver's ceiling, and what herald-api spends on a
    /// request that does nothing but HTTP (accept nothing new, parse, route, answer): the floor under
    /// every send's CPU on this machine in this hour.
    func healthzFloor(_ stack: BenchStack) async throws -> (perSecond: Double, cpuPerRequest: Double) {
        let pids = stack.apis.map(\.pid)
        let before = ProcessCPU.seconds(pids)
        let trivial = try await Wrk.run(url: "http://127.0.0.1:\(stack.settings.apiPort)/healthz", script: nil, seconds: 5)
        let cpu = ProcessCPU.seconds(pids) - before
        return (trivial.perSecond, cpu / Double(max(1, trivial.requests)) * 1_000_000)
    }

    /// The rungs under a send (`SendRung`: refused at its number, to the test number), each loaded like
    /// the send (wrk, c64, 5 s) on the same stack in the same hour, as herald-api's CPU per request. With
    /// `/healthz` below them and the full send above, the differences are what each part of a send
    /// costs, so the table shows how far down a send can go while it keeps its guarantees.
    func sendRungs(_ stack: BenchStack) async throws -> (refused: Double, testNumber: Double) {
        let pids = stack.apis.map(\.pid)
        func perRequest(_ rung: SendRung) async throws -> Double {
            let body = rung.body ?? ""
            let before = ProcessCPU.seconds(pids)
            let result = try await Wrk.run(
                url: "http://127.0.0.1:\(stack.settings.apiPort)", script: Wrk.fixedSendScript(apiKey: TestConfiguration.apiKey, body: body),
                seconds: 5)
            let cpu = ProcessCPU.seconds(pids) - before
            // A rung that answered otherwise than intended measured something else: say so rather than print it.
            let answered = rung.status == 200 ? result.requests - result.failed : result.failed
            guard result.requests > 0, answered == result.requests else {
                throw TestFailure("the rung \(body) answered \(result.failed) of \(result.requests) requests with an error")
            }
            return cpu / Double(result.requests) * 1_000_000
        }
        let refused = try await perRequest(SendRung.refused)
        let fixed = try await perRequest(SendRung.testNumber)
        print(
            String(
                format: "(b) rungs under a send at c64: refused at its number %.1f µs of herald-api CPU per request; to the test number %.1f µs",
                refused, fixed))
        return (refused, fixed)
    }

    /// The full send at c64 for 5 s with no herald-sms-worker running (stopped by SIGTERM, so it ends
    /// its turn and leaves no store transaction open; a new one drains the jobs afterwards): what
    /// herald-api spends per send when it does not share the two cores with a worker draining as the
    /// sends arrive, as the table's c64 run does. The difference to that run is the machine's share,
    /// not Herald's code. (A worker frozen by SIGSTOP instead can be frozen holding SQLite's write lock,
    /// its outcomes' commit busy about two thirds of a drain, and every send then waits out the 10 s
    /// busy timeout, so a run can answer nothing at all.)
    func sendWithoutWorker(_ stack: BenchStack) async throws -> (accepted: Int, apiCPU: Double?) {
        let pids = stack.apis.map(\.pid)
        let stopped = stack.workers.withLock { workers in
            defer { workers.removeAll() }
            return workers
        }
        for worker in stopped { await worker.terminate() }
        defer { for _ in stopped { _ = try? stack.startWorker() } }
        let before = ProcessCPU.seconds(pids)
        let result = try await Wrk.run(
            url: "http://127.0.0.1:\(stack.settings.apiPort)", script: Wrk.sendScript(apiKey: TestConfiguration.apiKey, offset: 80_000_000),
            seconds: 5)
        let cpu = ProcessCPU.seconds(pids) - before
        let accepted = result.requests - result.failed
        let perSend = cpu / Double(max(1, accepted)) * 1_000_000
        print(
            String(
                format: "(b) sends at c64 with no worker running: %d of %d accepted, herald-api CPU %.0f µs per send", accepted, result.requests,
                perSend))
        // A run that refused most of its sends measured refusals, not sends: reported, not put in the table.
        guard accepted * 10 >= result.requests * 9, accepted > 0 else {
            let answer = try? await stack.client.post(
                "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": BenchStack.phone(7_999_999)])
            print("    left out of the table; one more send answered \(answer.map { "\($0.status) \($0.errorMessage ?? "")" } ?? "nothing")")
            return (accepted, nil)
        }
        return (accepted, perSend)
    }

    /// One store variant: throughput with the default limits (and each process's CPU meanwhile),
    /// the answer time at a fixed rate with and without limits, enqueue → gateway, memory.
    func apiFigures(_ variant: (label: String, store: TestStore, apis: Int), into table: Table) async throws {
        let limited = try await BenchStack.start(limits: measuredLimitsSection, store: variant.store, apis: variant.apis)
        do {
            if variant.store == .sqlite {
                // The driver's own ceiling, against the cheapest endpoint there is.
                let floor = try await healthzFloor(limited)
                table.add("driver: req/s against /healthz (trivial endpoint)", "driver", floor.perSecond)
                table.add("API: CPU µs per /healthz request (HTTP floor)", variant.label, floor.cpuPerRequest)
                let rungs = try await sendRungs(limited)
                table.add("API: CPU µs per send refused at its number (no store, no broker)", variant.label, rungs.refused)
                table.add("API: CPU µs per send to the test number (session stored, no limits, no job)", variant.label, rungs.testNumber)
            }
            let load = try await closedLoopLoad(limited)
            table.add("API: accepted sends/s, c64, default limits", variant.label, load.perSecond)
            table.add("API: CPU µs per send (user+system)", variant.label, load.apiCPU)
            for (name, share) in load.cpuShares { table.add("CPU % during the c64 run: \(name)", variant.label, share) }
            // The proof of what saturates first: all the machine's CPU per send, and the sends/s its cores
            // would carry if herald-api itself cost nothing (broker, worker, gateway and driver unchanged).
            table.add("whole machine CPU µs per accepted send", variant.label, load.machineCPU)
            if let waits = load.postgres {
                table.add("PostgreSQL during the c64 run: connections executing", variant.label, waits.executing)
                table.add("PostgreSQL during the c64 run: connections flushing WAL", variant.label, waits.flushingWAL)
                table.add("PostgreSQL during the c64 run: connections waiting for locks", variant.label, waits.waitingForLocks)
            }
            let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
            table.add(
                "sends/s these cores carry if herald-api cost nothing", variant.label, cores * 1_000_000 / max(1, load.machineCPU - load.apiCPU))
            if let ceiling = table.lastValue("broker: raw publish with confirms, 500 in flight, msg/s") {
                table.add("API sends/s as a share of raw publish", variant.label, load.perSecond / ceiling * 100)
            }
            _ = await eventually(timeout: .seconds(120)) { limited.gateway.receivedCount >= load.accepted }
            if variant.store == .sqlite {
                let alone = try await sendWithoutWorker(limited)
                if let perSend = alone.apiCPU { table.add("API: CPU µs per send, no worker running meanwhile", variant.label, perSend) }
                _ = await eventually(timeout: .seconds(120)) { limited.gateway.receivedCount >= load.accepted + alone.accepted }
            }
            let withLimits = try await latency(limited, label: "(c) [\(variant.label)] with limits:")
            table.add("enqueue → gateway p99 ms at 500 req/s", variant.label, withLimits.endToEndP99)
            table.add("API: peak RSS MiB", variant.label, limited.apis.map { Self.mebibytes(statusField($0.pid, "VmHWM")) }.max() ?? .nan)
            let open = try await BenchStack.start(limits: Self.noLimits, store: variant.store, apis: variant.apis)
            do {
                let withoutLimits = try await latency(open, label: "(c) [\(variant.label)] without limits:")
                table.add("API: answer p50 ms at 500 req/s", variant.label, withoutLimits.p50)
                table.add("API: answer p99 ms at 500 req/s", variant.label, withoutLimits.p99)
                // The worse of the two runs: a stalled disk stalls every answer waiting on a sync.
                let syncs = [withLimits.disk, withoutLimits.disk].compactMap { $0 }
                if syncs.isEmpty == false {
                    table.add("disk: fdatasync p99 ms beside the 500 req/s runs", variant.label, syncs.map(\.p99).max() ?? .nan)
                    table.add("disk: fdatasync max ms beside the 500 req/s runs", variant.label, syncs.map(\.max).max() ?? .nan)
                }
                table.add("limits add to p50 ms at 500 req/s", variant.label, withLimits.p50 - withoutLimits.p50)
                table.add("limits add to p99 ms at 500 req/s", variant.label, withLimits.p99 - withoutLimits.p99)
            } catch {
                await open.stop()
                throw error
            }
            await open.stop()
        } catch {
            await limited.stop()
            throw error
        }
        await limited.stop()
    }

    /// 64 connections sending back to back for `throughputSeconds` (wrk with a script that gives every
    /// request its own number, or the built-in client), with the CPU every process used meanwhile.
    func closedLoopLoad(_ stack: BenchStack) async throws -> (
        accepted: Int, perSecond: Double, apiCPU: Double, machineCPU: Double, cpuShares: [(String, Double)], postgres: PostgresWaits?
    ) {
        let watch = CPUWatch([
            ("herald-api(s)", { stack.apis.map(\.pid) }), ("RabbitMQ", { ProcessCPU.pids(named: "beam.smp") }),
            ("PostgreSQL", { ProcessCPU.pids(named: "postgres") }), ("herald-sms-worker", { stack.workers.withLock { $0.map(\.pid) } }),
            ("herald-bench (fake gateway)", { [getpid()] }),
        ])
        let driverBefore = ProcessCPU.childrenSeconds()
        let started = ContinuousClock.now
        // On PostgreSQL, whether its connections compute, flush or queue for locks meanwhile.
        async let postgresWaits = stack.settings.storeURL?.hasPrefix("postgres") == true ? PostgresWaits.sample(seconds: throughputSeconds) : nil
        let accepted: Int
        if Wrk.available {
            var results: [Wrk.Result] = []
            try await withThrowingTaskGroup(of: Wrk.Result.self) { group in
                for (index, port) in stack.apiPorts.enumerated() {
                    group.addTask {
                        try await Wrk.run(
                            url: "http://127.0.0.1:\(port)",
                            script: Wrk.sendScript(apiKey: TestConfiguration.apiKey, offset: 10_000_000 * (index + 1)),
                            seconds: throughputSeconds, connections: 64 / stack.apiPorts.count)
                    }
                }
                for try await result in group { results.append(result) }
            }
            accepted = results.reduce(0) { $0 + $1.requests - $1.failed }
        } else {
            accepted = try await throughput(stack).accepted
        }
        let seconds = (ContinuousClock.now - started).seconds
        let used = watch.used()
        var shares = used.shares
        shares.insert(("load driver", (ProcessCPU.childrenSeconds() - driverBefore) / seconds * 100), at: shares.count - 1)
        let apiCPU = (used.seconds.first ?? 0) / Double(max(1, accepted)) * 1_000_000
        let machineCPU = used.machineSeconds / Double(max(1, accepted)) * 1_000_000
        print(
            String(
                format:
                    "(b) sendVerificationCode at concurrency 64, default limits: %d accepted in %.1f s = %.0f req/s; herald-api CPU %.0f µs per send; CPU %@",
                accepted, seconds, Double(accepted) / seconds, apiCPU,
                shares.map { String(format: "%@ %.0f %%", $0.0, $0.1) }.joined(separator: ", ")))
        let waits = await postgresWaits
        if let waits { print(waits.line) }
        return (accepted, Double(accepted) / seconds, apiCPU, machineCPU, shares, waits)
    }

    /// The top ten functions of herald-api under load (perf record, sampling), when perf is installed,
    /// and its CPU split by stage (`PerfStages`), in microseconds of `perSend` when given (else of the
    /// load runs' median). With `keeping`, the data stays at that path for `perf report -g`.
    /// `loadRuns` c64 runs on the same stack come first (for A/B comparisons of one change: their
    /// sends/s and herald-api CPU per send), after `prefillRows` of each kind (`StorePrefill`).
    func perfTopTen(
        store: TestStore = .sqlite, keeping: String? = nil, loadRuns: Int = 0, perSend: Double? = nil, prefillRows: Int = 0
    ) async throws {
        let stack = try await BenchStack.start(limits: measuredLimitsSection, store: store)
        var perSendOfRuns = [Double]()
        do {
            try await StorePrefill(rows: prefillRows).fill(stack)
        } catch {
            await stack.stop()
            throw error
        }
        for _ in 0..<loadRuns {
            do {
                perSendOfRuns.append(try await closedLoopLoad(stack).apiCPU)
            } catch {
                await stack.stop()
                throw error
            }
        }
        let data = keeping ?? NSTemporaryDirectory() + "herald-perf-\(UUID().uuidString.prefix(6)).data"
        defer { if keeping == nil { try? FileManager.default.removeItem(atPath: data) } }
        // Stopped before returning, not from a deferred Task: the bench exits right after this, and a
        // Task that had not run yet left the herald-api of this stack running.
        do {
            try await profile(stack, into: data, perSend: perSend ?? (perSendOfRuns.isEmpty ? nil : Self.percentile(perSendOfRuns, 0.5)))
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    private func profile(_ stack: BenchStack, into data: String, perSend: Double?) async throws {
        let load = Task {
            try await Wrk.run(
                url: "http://127.0.0.1:\(stack.settings.apiPort)", script: Wrk.sendScript(apiKey: TestConfiguration.apiKey, offset: 70_000_000),
                seconds: 8)
        }
        try await Task.sleep(for: .seconds(1))
        // Stopped by SIGINT rather than `-- sleep 5`: perf waits for its workload's SIGCHLD, which a child of
        // this process may never get.
        // DWARF call chains: SQLite (Debian's) and parts of the runtime keep no frame pointers, so frame-
        // pointer chains lost most of the SQLite writer's samples to "unknown" callers.
        _ = try await shell(
            "timeout -s INT 5 perf record -F 499 --call-graph dwarf,16384 -p \(stack.apis[0].pid) -o \(data) > /dev/null 2>&1; true")
        _ = try await load.value
        // One pass over the samples (unwinding DWARF chains is the slow part) for both lists.
        let stages = PerfStages(script: try await shell("perf script -i \(data) -F tid,ip,sym,dso 2>/dev/null"))
        print("\nherald-api under load (perf record --call-graph dwarf, 5 s, self time), top ten:")
        for line in stages.topSelf(10) { print("  " + line) }
        let per = perSend.map { String(format: ", µs of %.0f µs per send", $0) } ?? ""
        print("\nherald-api by stage (\(stages.samples) samples; share\(per)):")
        for line in stages.lines(perSend: perSend) { print("  " + line) }
        print("\nherald-api in the kernel, by what entered it (\(stages.kernelSamples) samples; share of all\(per)):")
        for line in stages.kernelLines(12, perSend: perSend) { print("  " + line) }
    }

    static func mebibytes(_ text: String) -> Double {
        Double(text.split(separator: " ").first ?? "") ?? .nan
    }
}

/// Samples per figure and variant; printed as medians with ranges.
final class Table: Sendable {
    private let samples = Locked([String: [String: [Double]]]())
    private let order = Locked([String]())

    func add(_ figure: String, _ variant: String, _ value: Double) {
        order.withLock { if $0.contains(figure) == false { $0.append(figure) } }
        samples.withLock { $0[figure, default: [:]][variant, default: []].append(value) }
    }

    /// The median of one figure's runs for one variant.
    func median(_ figure: String, _ variant: String) -> Double? {
        let values = samples.withLock { $0[figure]?[variant] ?? [] }
        return values.isEmpty ? nil : Bench.percentile(values, 0.5)
    }

    func lastValue(_ figure: String) -> Double? {
        samples.withLock { $0[figure]?.values.first?.last }
    }

    func print(targets: [String: String], variants: [String]) {
        let columns = variants + ["broker", "driver"]
        let rows = order.withLock { $0 }
        let values = samples.withLock { $0 }
        func cell(_ numbers: [Double]) -> String {
            guard numbers.isEmpty == false else { return "" }
            let sorted = numbers.sorted()
            let median = sorted[sorted.count / 2]
            let format = median.magnitude >= 100 ? "%.0f" : "%.1f"
            let text = String(format: format, median)
            guard sorted.count > 1 else { return text }
            return text + " [" + String(format: format, sorted.first!) + "–" + String(format: format, sorted.last!) + "]"
        }
        func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
        let used = columns.filter { column in rows.contains { values[$0]?[column] != nil } }
        Swift.print("\nfigures: median [range] of the runs; targets the design aims at")
        Swift.print(pad("", 58) + pad("target", 36) + used.map { pad($0, 24) }.joined())
        for row in rows {
            Swift.print(pad(row, 58) + pad(targets[row] ?? "", 36) + used.map { pad(cell(values[row]?[$0] ?? []), 24) }.joined())
        }
    }
}

/// The CPU that named processes and the whole machine used from its creation until `used()`: the
/// shares (% of one core; the machine's last, "whole machine", 100 per core) and the seconds.
struct CPUWatch {
    let processes: [(name: String, pids: () -> [Int32])]
    let before: [Double]
    let machineBefore = ProcessCPU.machineBusySeconds()
    let started = ContinuousClock.now

    init(_ processes: [(name: String, pids: () -> [Int32])]) {
        self.processes = processes
        before = processes.map { ProcessCPU.seconds($0.pids()) }
    }

    func used() -> (shares: [(String, Double)], seconds: [Double], machineSeconds: Double) {
        let elapsed = (ContinuousClock.now - started).seconds
        let seconds = zip(processes, before).map { process, start in ProcessCPU.seconds(process.pids()) - start }
        let machine = ProcessCPU.machineBusySeconds() - machineBefore
        let shares = zip(processes, seconds).map { ($0.name, $1 / elapsed * 100) } + [("whole machine", machine / elapsed * 100)]
        return (shares, seconds, machine)
    }
}

/// CPU time of processes from /proc.
enum ProcessCPU {
    /// User + system seconds of `pids` together.
    static func seconds(_ pids: [Int32]) -> Double {
        pids.reduce(0) { total, pid in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = text.lastIndex(of: ")") else {
                return total
            }
            let fields = text[text.index(after: end)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }

    /// Processes whose command name is `name`.
    static func pids(named name: String) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> Int32? in
            guard let pid = Int32(entry), let comm = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8) else { return nil }
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == name ? pid : nil
        }
    }

    /// Busy seconds of all CPUs together since boot (/proc/stat: user, nice, system, irq, softirq; not
    /// idle, iowait or steal), so the table shows whether the machine, not one process, saturates.
    static func machineBusySeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8), let line = text.split(separator: "\n").first else { return 0 }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 7 else { return 0 }
        return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds of this process's finished children (the load driver, once it exited).
    static func childrenSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }
}

/// wrk (Debian's), the native load driver: far above what herald-api answers on this machine, so the
/// figures are the API's, not the driver's (the table prints its ceiling against /healthz).
enum Wrk {
    static var available: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk") }

    struct Result {
        var requests: Int
        var failed: Int
        var perSecond: Double
    }

    /// A Lua script that POSTs sendVerificationCode with a number of its own for every request
    /// (threads count from `offset` in steps of a million, so no two requests share a number).
    static func sendScript(apiKey: String, offset: Int) throws -> String {
        let path = NSTemporaryDirectory() + "herald-wrk-\(UUID().uuidString.prefix(6)).lua"
        let script = """
            local threads = 0
            setup = function(thread) thread:set("first", \(offset) + threads * 1000000); threads = threads + 1 end
            init = function(args) counter = first end
            request = function()
              counter = counter + 1
              local body = string.format('{"phoneNumber":"+1555%07d"}', 2000000 + counter % 8000000)
              return wrk.format("POST", "/v1/accounts:sendVerificationCode?key=\(apiKey)", {["Content-Type"]="application/json"}, body)
            end
            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A Lua script that POSTs sendVerificationCode with the same `body` every time.
    static func fixedSendScript(apiKey: String, body: String) throws -> String {
        let path = NSTemporaryDirectory() + "herald-wrk-\(UUID().uuidString.prefix(6)).lua"
        let script = """
            wrk.method = "POST"
            wrk.path = "/v1/accounts:sendVerificationCode?key=\(apiKey)"
            wrk.headers["Content-Type"] = "application/json"
            wrk.body = '\(body)'
            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func run(url: String, script: String?, seconds: Int, connections: Int = 64) async throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
        var arguments = ["-t2", "-c\(max(2, connections))", "-d\(seconds)s", "--timeout", "10s"]
        if let script { arguments += ["-s", script] }
        process.arguments = arguments + [url]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = await Task.detached { output.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        if let script { try? FileManager.default.removeItem(atPath: script) }
        let text = String(decoding: data, as: UTF8.self)
        func number(after marker: String) -> Double? {
            guard let range = text.range(of: marker) else { return nil }
            return Double(text[range.upperBound...].trimmingCharacters(in: .whitespaces).prefix { $0.isNumber || $0 == "." })
        }
        let requests = text.split(separator: "\n").first { $0.contains("requests in") }.flatMap {
            Int($0.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber })
        }
        guard let requests, let perSecond = number(after: "Requests/sec:") else { throw TestFailure("wrk printed no figures:\n\(text)") }
        let failed = Int(number(after: "Non-2xx or 3xx responses:") ?? 0)
        // Requests/sec counts refused answers too; accepted ones are what the table reports.
        return Result(requests: requests, failed: failed, perSecond: perSecond * Double(requests - failed) / Double(max(1, requests)))
    }
}

/// perf (Debian's linux-perf), when installed: sampling works on this machine kind, cycle counters do not.
enum Perf {
    static var available: Bool {
        ["/usr/bin/perf", "/usr/local/bin/perf"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
