import Foundation
import HeraldTesting

/// The instructions suite: herald-api under callgrind, its user-space instructions per accepted send.
/// CPU time on this shared machine moved by a factor of 2.5–3.5 between days with the same build, so
/// a change of a few percent could only be judged in pairs loaded together; an instruction count does
/// not depend on the neighbours, so two builds measured on different days can be compared. It leaves
/// out the kernel's share (about a third of a send's CPU time: see the profile suite's kernel lines).
extension HeraldBenchCommand {
    /// Sends made before counting starts: connections open, statements prepared, caches filled.
    static let warmUpSends = 500

    /// Prints each run's count and the functions of the last; returns the counts per send (none when
    /// valgrind is missing).
    @discardableResult
    func instructionCounts(listing: Int = 25) async throws -> [Double] {
        guard await shellStatus("(command -v valgrind && command -v callgrind_annotate && command -v objcopy) >/dev/null") == 0 else {
            print("(i) skipped: valgrind or objcopy is not installed (apt-get install valgrind binutils; make bench installs them)")
            return []
        }
        let scratch = NSTemporaryDirectory() + "herald-callgrind-\(UUID().uuidString.prefix(6))"
        // The dumps are kept where --callgrind-dir says (for callgrind_annotate --tree=calling).
        let directory = callgrindDir ?? scratch
        for path in [scratch, directory] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // valgrind 3.19 (Debian 12's) gives up on the DWARF 5 that Swift 6.3 emits; without the debug
        // sections it runs the same code, and the symbol table still names every function.
        let binary = scratch + "/herald-api"
        _ = try await shell("objcopy --strip-debug \(shellQuoted(HeraldProcess.binDirectory + "/herald-api")) \(shellQuoted(binary))")
        let valgrind = try await shell("command -v valgrind").trimmingCharacters(in: .whitespacesAndNewlines)
        let launcher = [
            valgrind, "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=\(directory)/callgrind.out", binary,
        ]
        let stack = try await BenchStack.start(
            limits: measuredLimitsSection, store: profileStore == "postgres" ? .postgres : .sqlite, apiLauncher: launcher,
            readyTimeout: .seconds(120))
        do {
            let pid = stack.apis[0].pid
            try await queueSends(Self.warmUpSends, through: stack, offset: 80_000_000)
            var perSend: [Double] = []
            for run in 1...runs {
                let batchesBefore = try await batchTotals(stack)
                _ = try await shell("callgrind_control --zero \(pid) >/dev/null && callgrind_control --instr=on \(pid) >/dev/null")
                try await queueSends(instructionSends, through: stack, offset: 80_000_000 + run * 1_000_000)
                let accepted = instructionSends
                _ = try await shell("callgrind_control --dump=run\(run) \(pid) >/dev/null && callgrind_control --instr=off \(pid) >/dev/null")
                let batches = try await batchTotals(stack)
                let dump = try await newestDump(in: directory)
                let total = try Self.instructionTotal(of: dump)
                let instructions = total / Double(max(1, accepted))
                perSend.append(instructions)
                print(
                    String(
                        format:
                            "(i) run %d: %d sends accepted at concurrency 64; herald-api %.0f instructions per send (user space); %.1f sends per commit",
                        run, accepted, instructions, (batches.calls - batchesBefore.calls) / max(1, batches.commits - batchesBefore.commits)))
                if run == runs {
                    print("\n(i) herald-api's functions by instructions of their own (self), per send, last run:")
                    for line in try await topFunctions(of: dump, sends: accepted, count: listing) { print("  " + line) }
                }
            }
            print(
                String(
                    format: "(i) herald-api instructions per send: %.0f [%.0f–%.0f] over %d runs", Self.percentile(perSend, 0.5),
                    perSend.min() ?? 0, perSend.max() ?? 0, perSend.count))
            await stack.stop()
            return perSend
        } catch {
            await stack.stop()
            throw error
        }
    }

    /// herald-api's group-commit totals so far: store calls and commits (`herald_store_batch_size`).
    private func batchTotals(_ stack: BenchStack) async throws -> (calls: Double, commits: Double) {
        let text = String(decoding: try await HeraldClient(port: stack.apiMetricsPorts[0]).get("/metrics").body, as: UTF8.self)
        func total(_ name: String) -> Double {
            text.split(separator: "\n").filter { $0.hasPrefix(name + "{") || $0.hasPrefix(name + " ") }
                .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
        }
        return (total("herald_store_batch_size_sum"), total("herald_store_batch_size_count"))
    }

    /// The dump callgrind_control wrote last (`callgrind.out.N`, N counting dumps).
    private func newestDump(in directory: String) async throws -> String {
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

    /// The `count` functions with the most instructions of their own, demangled, per send.
    private func topFunctions(of dump: String, sends: Int, count: Int) async throws -> [String] {
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
            lines.append(String(format: "%8.0f %@  %@", total / Double(max(1, sends)), String(share), function))
            if lines.count == count { break }
        }
        return lines
    }
}
