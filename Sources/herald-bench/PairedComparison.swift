import Foundation
import HeraldCore
import HeraldTesting

/// The pair suite (`pair --baseline-bin DIR`): this build and another one, each a full stack
/// (herald-api, herald-sms-worker, fake gateway, default limits), loaded at the same moment by one wrk
/// each, `runs` times. On a shared machine the speed of the same build moved by ±15 % between runs
/// minutes apart and by a factor of 2.5 between days, which hides any change smaller than that when
/// builds are measured one after the other. Loaded together, both builds see the same neighbours, the
/// same broker and each other, so the ratio of their CPU per send is what the change did.
extension Bench {
    func pairedComparison(baseline: String, store: TestStore) async throws {
        guard Wrk.available else { throw TestFailure("the pair suite drives both stacks with wrk (apt-get install wrk)") }
        for name in ["herald-api", "herald-sms-worker"] where FileManager.default.isExecutableFile(atPath: "\(baseline)/\(name)") == false {
            throw TestFailure("--baseline-bin \(baseline) holds no executable \(name)")
        }
        print("pair: this build (\(HeraldProcess.binDirectory)) against \(baseline), \(store), \(runs) runs of \(throughputSeconds) s at c64 each")
        if let baselineLimits { print("limits: this build \(measuredLimitsSection); baseline \(baselineLimits)") }
        if prefill > 0 { print("this build's store is prefilled with \(prefill) rows of each kind; the baseline's starts empty") }
        let ratios = try await withPair(baseline: baseline) {
            // The baseline's limits may differ (`--baseline-limits`): the same build with a part turned off.
            let limits = $0 == nil ? measuredLimitsSection : baselineLimits ?? measuredLimitsSection
            return try await BenchStack.start(limits: limits, store: store, binDirectory: $0)
        } _: { current, other in
            try await StorePrefill(rows: prefill).fill(current)
            let floor = try await healthzFloor(current)
            print(
                String(
                    format: "this build's herald-api spends %.0f µs per /healthz request at c64 (%.0f req/s): the HTTP floor in this hour",
                    floor.cpuPerRequest, floor.perSecond))
            var ratios: [Double] = []
            for run in 1...runs {
                async let mine = loadedCPU(current, offset: 20_000_000 * run)
                async let theirs = loadedCPU(other, offset: 20_000_000 * run + 10_000_000)
                let (a, b) = try await (mine, theirs)
                let ratio = a.cpuPerSend / max(1, b.cpuPerSend)
                ratios.append(ratio)
                print(
                    String(
                        format: "run %d: this build %.0f µs per send (%.0f sends/s), baseline %.0f µs (%.0f sends/s): ratio %.3f",
                        run, a.cpuPerSend, a.perSecond, b.cpuPerSend, b.perSecond, ratio))
            }
            return ratios
        }
        print("herald-api CPU per send, this build ÷ baseline: " + Self.summary(ratios, of: "paired runs"))
    }

    /// Starts this build's stack and then the baseline's (one after the other: each picks its own free
    /// ports; `start` gets nil for this build's executables, else the baseline's directory), runs `body`
    /// on them and stops both, whether it returned or threw.
    func withPair<T>(
        baseline: String, _ start: (String?) async throws -> BenchStack, _ body: (BenchStack, BenchStack) async throws -> T
    ) async throws -> T {
        let current = try await start(nil)
        let other: BenchStack
        do {
            other = try await start(baseline)
        } catch {
            await current.stop()
            throw error
        }
        do {
            let result = try await body(current, other)
            await current.stop()
            await other.stop()
            return result
        } catch {
            await current.stop()
            await other.stop()
            throw error
        }
    }

    /// `median <ratio> [<lowest>–<highest>] over <n> <what>`.
    static func summary(_ ratios: [Double], of what: String) -> String {
        let sorted = ratios.sorted()
        return String(format: "median %.3f [%.3f–%.3f] over %d ", sorted[sorted.count / 2], sorted.first!, sorted.last!, sorted.count) + what
    }

    /// One wrk at c64 against `stack` for `throughputSeconds`, and its herald-api's CPU per accepted send.
    private func loadedCPU(_ stack: BenchStack, offset: Int) async throws -> (cpuPerSend: Double, perSecond: Double) {
        let pids = stack.apis.map(\.pid)
        let before = ProcessCPU.seconds(pids)
        let started = ContinuousClock.now
        let result = try await Wrk.run(
            url: "http://127.0.0.1:\(stack.settings.apiPort)", script: Wrk.sendScript(apiKey: TestConfiguration.apiKey, offset: offset),
            seconds: throughputSeconds)
        let seconds = (ContinuousClock.now - started).seconds
        let accepted = max(1, result.requests - result.failed)
        return ((ProcessCPU.seconds(pids) - before) / Double(accepted) * 1_000_000, Double(accepted) / seconds)
    }
}

/// The worker pair suite (`worker-pair --baseline-bin DIR`): a `--backlog` queued into each of
/// two stacks while no worker runs, then this build's herald-sms-worker and the other build's started
/// at the same moment, each draining its own stack, `runs` times. Measured one after the other, one
/// build's drains moved by ±15 % between runs; draining together, both share the machine, the broker
/// and the store, so the ratio of their CPU per job is what the change did. (The one that finishes
/// first leaves the other a quieter machine for its last jobs; the ratio is of CPU per job, which that
/// moves less than the drain's speed.)
extension Bench {
    func pairedDrain(baseline: String, store: TestStore) async throws {
        guard FileManager.default.isExecutableFile(atPath: "\(baseline)/herald-sms-worker") else {
            throw TestFailure("--baseline-bin \(baseline) holds no executable herald-sms-worker")
        }
        print("worker-pair: this build (\(HeraldProcess.binDirectory)) against \(baseline), \(store), \(runs) drains of \(backlog) jobs each")
        let ratios = try await withPair(baseline: baseline) {
            try await BenchStack.start(limits: Self.noLimits, store: store, worker: false, workerInFlight: workerConcurrency, binDirectory: $0)
        } _: { current, other in
            var ratios: [Double] = []
            for run in 1...runs {
                async let queuedMine: Void = queueBacklog(current, offset: 20_000_000 * run)
                async let queuedTheirs: Void = queueBacklog(other, offset: 20_000_000 * run + 10_000_000)
                _ = try await (queuedMine, queuedTheirs)
                async let mine = drained(current)
                async let theirs = drained(other)
                let (a, b) = try await (mine, theirs)
                let ratio = a.cpuPerJob / max(1, b.cpuPerJob)
                ratios.append(ratio)
                print(
                    String(
                        format: "run %d: this build %.0f µs per job (%.0f jobs/s, peak RSS %@), baseline %.0f µs (%.0f jobs/s, %@): ratio %.3f",
                        run, a.cpuPerJob, a.perSecond, a.peak, b.cpuPerJob, b.perSecond, b.peak, ratio))
            }
            return ratios
        }
        print("herald-sms-worker CPU per job, this build ÷ baseline: " + Self.summary(ratios, of: "paired drains"))
    }

    /// Starts `stack`'s worker, waits until its gateway has `backlog` more SMS, stops the worker: its CPU
    /// per job, jobs/s and peak RSS.
    private func drained(_ stack: BenchStack) async throws -> (cpuPerJob: Double, perSecond: Double, peak: String) {
        let before = stack.gateway.receivedCount
        let worker = try stack.startWorker()
        let started = ContinuousClock.now
        guard await eventually(timeout: .seconds(600), { stack.gateway.receivedCount >= before + backlog }) else {
            throw TestFailure("a worker did not drain its backlog: \(stack.gateway.receivedCount - before) of \(backlog)")
        }
        let seconds = (ContinuousClock.now - started).seconds
        let result = (cpuSeconds(worker.pid) / Double(backlog) * 1_000_000, Double(backlog) / seconds, peak(worker.pid))
        _ = await worker.terminate()
        stack.workers.withLock { $0.removeAll { $0 === worker } }
        return result
    }
}
