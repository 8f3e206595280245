import Foundation
import HeraldTesting

/// The instructions suite: herald-api under callgrind, its user-space instructions per accepted send,
/// then herald-sms-worker's per job delivered. CPU time on this shared machine moved by a factor of
/// 2.5–3.5 between days with the same build, so a change of a few percent could only be judged in pairs
/// loaded together; an instruction count does not depend on the neighbours, so two builds measured on
/// different days can be compared. It leaves out the kernel's share (about a third of a send's CPU
/// time: see the profile suite's kernel lines).
extension Bench {
    /// Sends made before counting starts: connections open, statements prepared, caches filled.
    static let warmUpSends = 500

    /// A process's executable copied without debug sections, and the valgrind command that runs it.
    struct Callgrind {
        let launcher: [String]
        /// Where the dumps go: --callgrind-dir, else `scratch`.
        let directory: String
        /// The copy and (without --callgrind-dir) the dumps; removed by `remove()`.
        let scratch: String

        func remove() { try? FileManager.default.removeItem(atPath: scratch) }
    }

    /// nil (and a line saying so) when valgrind or objcopy is missing.
    func callgrind(_ executable: String) async throws -> Callgrind? {
        guard await shellStatus("(command -v valgrind && command -v callgrind_annotate && command -v objcopy) >/dev/null") == 0 else {
            print("(i) skipped: valgrind or objcopy is not installed (apt-get install valgrind binutils; make bench installs them)")
            return nil
        }
        let scratch = NSTemporaryDirectory() + "herald-callgrind-\(UUID().uuidString.prefix(6))"
        // The dumps are kept where --callgrind-dir says (for callgrind_annotate --tree=calling).
        let directory = callgrindDir.map { "\($0)/\(executable)" } ?? scratch
        for path in [scratch, directory] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        // valgrind 3.19 (Debian 12's) gives up on the DWARF 5 that Swift 6.3 emits; without the debug
        // sections it runs the same code, and the symbol table still names every function.
        let binary = scratch + "/" + executable
        _ = try await shell("objcopy --strip-debug \(shellQuoted(HeraldProcess.binDirectory + "/" + executable)) \(shellQuoted(binary))")
        let valgrind = try await shell("command -v valgrind").trimmingCharacters(in: .whitespacesAndNewlines)
        return Callgrind(
            launcher: [valgrind, "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=\(directory)/callgrind.out", binary],
            directory: directory, scratch: scratch)
    }

    /// What `instructionCounts` measured on one stack: each run's instructions per send, and the rungs
    /// under a send (`SendRung`), one counted run each, from the bottom up.
    struct APIInstructions {
        var perSend: [Double] = []
        var rungs: [(rung: SendRung, perRequest: Double)] = []
    }

    /// herald-api's instructions per accepted send at c64 with the default limits, then per request of
    /// each rung under a send. Prints each run, the functions of the last send run and the ladder;
    /// returns the counts (none when valgrind is missing).
    @discardableResult
    func instructionCounts(listing: Int = 25) async throws -> APIInstructions {
        guard let callgrind = try await callgrind("herald-api") else { return APIInstructions() }
        defer { callgrind.remove() }
        let stack = try await BenchStack.start(
            limits: measuredLimitsSection, store: profileStore == "postgres" ? .postgres : .sqlite, apiLauncher: callgrind.launcher,
            readyTimeout: .seconds(120))
        do {
            try await queueSends(Self.warmUpSends, through: stack, offset: 80_000_000)
            var counted = APIInstructions()
            let pid = stack.apis[0].pid
            counted.perSend = try await countedRuns(pid: pid, in: callgrind, process: "herald-api", unit: "send", listing: listing) { run in
                let before = try await batchTotals(port: stack.apiMetricsPorts[0])
                try await queueSends(instructionSends, through: stack, offset: 80_000_000 + run * 1_000_000)
                let after = try await batchTotals(port: stack.apiMetricsPorts[0])
                return (
                    instructionSends, String(format: "%.1f sends per commit", (after.calls - before.calls) / max(1, after.commits - before.commits))
                )
            }
            for rung in SendRung.all {
                // Each rung once warm before it counts: its own statements prepared, its paths' caches filled.
                try await makeRequests(Self.warmUpSends, named: rung.label, expecting: rung.status) { _ in try await rung.request(stack.client) }
                let perRequest = try await countOnce(pid: pid, in: callgrind) {
                    try await makeRequests(instructionSends, named: rung.label, expecting: rung.status) { _ in
                        try await rung.request(stack.client)
                    }
                    return instructionSends
                }
                counted.rungs.append((rung, perRequest))
            }
            printLadder(counted)
            await stack.stop()
            return counted
        } catch {
            await stack.stop()
            throw error
        }
    }

    /// The rungs from `/healthz` up to the send, each with what it adds to the one below.
    private func printLadder(_ counted: APIInstructions) {
        print("(i) herald-api instructions per request, the rungs under a send (user space; \(instructionSends) each at concurrency 64):")
        var below = 0.0
        var steps = counted.rungs.map { (label: $0.rung.label, adds: $0.rung.adds, count: $0.perRequest) }
        steps.append(
            (
                label: "the send", adds: "the limits, the ledger row, the code hashed and sealed, the job published and confirmed",
                count: Self.percentile(counted.perSend, 0.5)
            ))
        for step in steps {
            let label = step.label.padding(toLength: 22, withPad: " ", startingAt: 0)
            print("    " + label + String(format: "%9.0f %+9.0f  ", step.count, step.count - below) + step.adds)
            below = step.count
        }
    }

    /// herald-sms-worker's instructions per job delivered (its ledger claim and outcome, the gateway's
    /// request), its jobs queued by herald-api while it runs, as in service.
    @discardableResult
    func workerInstructionCounts(listing: Int = 25) async throws -> [Double] {
        guard let callgrind = try await callgrind("herald-sms-worker") else { return [] }
        defer { callgrind.remove() }
        let stack = try await BenchStack.start(
            limits: Self.noLimits, store: profileStore == "postgres" ? .postgres : .sqlite, worker: false, workerInFlight: workerConcurrency)
        do {
            let worker = try stack.startWorker(launcher: callgrind.launcher)
            var delivered = Self.warmUpSends
            try await queueSends(Self.warmUpSends, through: stack, offset: 90_000_000)
            try await waitForGateway(stack, count: delivered)
            let counts = try await countedRuns(pid: worker.pid, in: callgrind, process: "herald-sms-worker", unit: "job", listing: listing) {
                run in
                let before = try await batchTotals(port: stack.settings.metricsPort)
                try await queueSends(instructionSends, through: stack, offset: 90_000_000 + run * 1_000_000)
                delivered += instructionSends
                try await waitForGateway(stack, count: delivered)
                let after = try await batchTotals(port: stack.settings.metricsPort)
                return (
                    instructionSends,
                    String(format: "%.1f store calls per commit", (after.calls - before.calls) / max(1, after.commits - before.commits))
                )
            }
            await stack.stop()
            return counts
        } catch {
            await stack.stop()
            throw error
        }
    }

    /// `runs` times: counting zeroed and on, `work` (returns the units done and a note), a dump. Prints
    /// each run, the median with its range, and the functions of the last run by self cost.
    private func countedRuns(
        pid: Int32, in callgrind: Callgrind, process: String, unit: String, listing: Int, work: (Int) async throws -> (Int, String)
    ) async throws -> [Double] {
        var perUnit: [Double] = []
        for run in 1...runs {
            var note = ""
            var units = 0
            let (instructions, dump) = try await count(pid: pid, in: callgrind, dumpName: "run\(run)") {
                (units, note) = try await work(run)
                return units
            }
            perUnit.append(instructions)
            print(
                String(
                    format: "(i) run %d: %@ %.0f instructions per %@ (user space; %d counted at concurrency 64); %@", run, process, instructions,
                    unit, units, note))
            if run == runs {
                print("\n(i) \(process)'s functions by instructions of their own (self), per \(unit), last run:")
                for line in try await topFunctions(of: dump, units: units, count: listing) { print("  " + line) }
            }
        }
        print(
            String(
                format: "(i) %@ instructions per %@: %.0f [%.0f–%.0f] over %d runs", process, unit, Self.percentile(perUnit, 0.5),
                perUnit.min() ?? 0, perUnit.max() ?? 0, perUnit.count))
        return perUnit
    }

    /// Instructions per unit of `work` (which returns the units it did), counted once.
    private func countOnce(pid: Int32, in callgrind: Callgrind, work: () async throws -> Int) async throws -> Double {
        try await count(pid: pid, in: callgrind, dumpName: "rung", work: work).perUnit
    }

    /// Counting zeroed and on around `work`, then a dump named `dumpName`: the instructions per unit
    /// and the dump's path.
    private func count(
        pid: Int32, in callgrind: Callgrind, dumpName: String, work: () async throws -> Int
    ) async throws -> (perUnit: Double, dump: String) {
        _ = try await shell("callgrind_control --zero \(pid) >/dev/null && callgrind_control --instr=on \(pid) >/dev/null")
        let units = try await work()
        _ = try await shell("callgrind_control --dump=\(dumpName) \(pid) >/dev/null && callgrind_control --instr=off \(pid) >/dev/null")
        let dump = try newestDump(in: callgrind.directory)
        return (try Self.instructionTotal(of: dump) / Double(max(1, units)), dump)
    }

    private func waitForGateway(_ stack: BenchStack, count: Int) async throws {
        guard await eventually(timeout: .seconds(300), { stack.gateway.receivedCount >= count }) else {
            throw TestFailure("the worker under callgrind delivered \(stack.gateway.receivedCount) of \(count) jobs")
        }
    }

    /// A process's group-commit totals so far: store calls and commits (`herald_store_batch_size`).
    private func batchTotals(port: Int) async throws -> (calls: Double, commits: Double) {
        let metrics = try await MetricTotals.read(port: port)
        return (metrics.total("herald_store_batch_size_sum"), metrics.total("herald_store_batch_size_count"))
    }

    /// The dump callgrind_control wrote last (`callgrind.out.N`, N counting dumps).
    private func newestDump(in directory: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("callgrind.out.") }
        guard let newest = names.max(by: { (Int($0.split(separator: ".").last ?? "") ?? 0) < (Int($1.split(separator: ".").last ?? "") ?? 0) })
        else { throw TestFailure("callgrind wrote no dump in \(directory)") }
        return directory + "/" + newest
    }

    /// The dump's total of instructions executed (its `summary:` or `totals:` line).
    static func instructionTotal(of dump: String) throws -> Double {
        let text = try String(contentsOfFile: dump, encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
            if let value = Double(line.split(separator: " ").last ?? "") { return value }
        }
        throw TestFailure("no instruction total in \(dump)")
    }

    /// The `count` functions with the most instructions of their own, demangled, per unit of work.
    private func topFunctions(of dump: String, units: Int, count: Int) async throws -> [String] {
        let annotated = try await shell(
            "callgrind_annotate --inclusive=no --threshold=99 \(shellQuoted(dump)) 2>/dev/null | swift demangle --simplified 2>/dev/null")
        var lines: [String] = []
        for line in annotated.split(separator: "\n") {
            // "1,234,567 (12.34%)  ???:function [object]"
            let trimmed = line.drop { $0 == " " }
            guard let space = trimmed.firstIndex(of: " "), let total = Double(trimmed[..<space].replacingOccurrences(of: ",", with: "")),
                let close = trimmed.firstIndex(of: ")")
            else { continue }
            let share = trimmed[trimmed.index(after: space)...close]
            var function = trimmed[trimmed.index(after: close)...].trimmingCharacters(in: .whitespaces)
            if function.hasPrefix("???:") { function.removeFirst(4) }
            if function.count > 110 { function = String(function.prefix(107)) + "…" }
            lines.append(String(format: "%8.0f %@  %@", total / Double(max(1, units)), String(share), function))
            if lines.count == count { break }
        }
        return lines
    }
}
