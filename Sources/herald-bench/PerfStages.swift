import Foundation

/// herald-api's CPU under load from a `perf record --call-graph dwarf` of the process, read once
/// (`perf script`): the top functions by self time, and the split by the stage that spent it. The
/// self-time list is flat (no function above 7 %), so it cannot say where a send's microseconds go;
/// the threads and roots of the call chains can. Each sample goes to the first stage below that one
/// of its frames names, kernel time included (a system call's samples carry the user stack that made
/// it).
struct PerfStages {
    /// A stage, the frames that mark it (substrings of mangled or C symbol names) and, for the task
    /// stages, whether a frame of Herald's own modules must be on the stack as well.
    struct Stage {
        let name: String
        let markers: [String]
        var needsHeraldFrame = false
    }

    /// In order of precedence: the store's and the broker's threads first, then the Swift tasks (split
    /// into Herald's handler code and the framework around it), then NIO's event loops. On PostgreSQL
    /// the store's batches run as tasks on the client's event loop, so they are looked for before both.
    static let stages = [
        Stage(name: "SQLite writer (group commit of admissions)", markers: ["SQLiteBackendC5drain"]),
        Stage(name: "SQLite checkpointer thread", markers: ["SQLiteBackendC4path"]),
        Stage(name: "PostgreSQL client (batches, postgres-nio)", markers: ["PostgresBatcher", "11PostgresNIO"]),
        Stage(name: "AMQP connection thread (publishes, confirms)", markers: ["ConnectionDriverC3run"]),
        Stage(name: "tasks: Herald's handler code", markers: ["swift_job_run"], needsHeraldFrame: true),
        Stage(name: "tasks: Hummingbird, HTTP types, awaits", markers: ["swift_job_run"]),
        Stage(name: "NIO event loops (HTTP reads, writes)", markers: ["SelectableEventLoopC3run"]),
    ]
    static let other = "other (thread-pool upkeep, cut stacks)"

    private(set) var samples = 0
    private(set) var kernelSamples = 0
    private(set) var counts = [String: Int]()
    /// Samples by the function they were taken in ("[k] " for the kernel's, "[.] " for the rest).
    private(set) var selfCounts = [String: Int]()
    /// Kernel samples by what entered the kernel: the system call (named by the C library's wrapper
    /// that made it) or the interrupt or exception taken. The stages say whose work it was; this says
    /// which kernel work a send pays for (socket writes, syncs, wake-ups), the floor under the stages.
    private(set) var kernelEntries = [String: Int]()

    /// Reads `perf script -F tid,ip,sym,dso`: a sample is a header line (the thread id) and then one
    /// tab-indented line per frame, innermost first, up to a blank line.
    init(script: some StringProtocol) {
        var frames = [Substring]()
        for line in script.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.first == "\t" {
                frames.append(Substring(line))
            } else {
                add(frames)
                frames.removeAll(keepingCapacity: true)
            }
        }
        add(frames)
    }

    private mutating func add(_ frames: [Substring]) {
        guard frames.isEmpty == false else { return }
        samples += 1
        if frames[0].hasSuffix("([kernel.kallsyms])") {
            kernelSamples += 1
            kernelEntries[Self.kernelEntry(frames), default: 0] += 1
        }
        // The function the sample was taken in: the first frame that is not an inlined call inside it.
        let own = frames.first { $0.hasSuffix("(inlined)") == false } ?? frames[0]
        selfCounts[(own.hasSuffix("([kernel.kallsyms])") ? "[k] " : "[.] ") + Self.symbol(of: own), default: 0] += 1
        let stage = Self.stages.first { stage in
            frames.contains { frame in stage.markers.contains { frame.contains($0) } }
                && (stage.needsHeraldFrame == false || frames.contains(where: Self.isHeraldFunction))
        }
        counts[stage?.name ?? Self.other, default: 0] += 1
    }

    /// Whether a frame's function belongs to one of Herald's modules: its mangled name starts with
    /// `$s`, the module name's length and `Herald`. A library's generic code specialised for a Herald
    /// type (Hummingbird's request loop over `HeraldRequestContext`) names Herald later in its symbol
    /// and stays the library's.
    static func isHeraldFunction(_ frame: Substring) -> Bool {
        let fields = frame.split(maxSplits: 2, whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, fields[1].hasPrefix("$s") else { return false }
        return fields[1].dropFirst(2).drop(while: \.isNumber).hasPrefix("Herald")
    }

    /// A frame line's function name: between the address and the object it is in, `(…)` at the end.
    /// Without one (a stripped library's internal function), the address and the object, as `perf
    /// report` lists them, so that such functions are not lumped together as one.
    static func symbol(of frame: Substring) -> String {
        let fields = frame.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 2 else { return "?" }
        let text = fields[1]
        guard let objectStart = text.range(of: " (", options: .backwards) else { return String(text) }
        let name = text[..<objectStart.lowerBound]
        guard name == "[unknown]" else { return String(name) }
        let object = text[objectStart.upperBound...].dropLast().split(separator: "/").last ?? "?"
        return "0x\(fields[0]) (\(object))"
    }

    /// What a kernel sample's chain entered the kernel through. Frames run innermost first: a system
    /// call's chain has `entry_SYSCALL_64…` as its outermost kernel frame and the C library's wrapper
    /// just outside it (`__libc_pwrite64`, `__GI___writev`); an interrupt's has an `asm_…` frame.
    static func kernelEntry(_ frames: [Substring]) -> String {
        let names = frames.map { symbol(of: $0) }
        if let entry = names.lastIndex(where: { $0.hasPrefix("entry_SYSCALL_64") }) {
            guard entry + 1 < names.count, names[entry + 1].hasPrefix("0x") == false else { return "system call (caller unknown)" }
            return "system call " + systemCall(wrapper: names[entry + 1])
        }
        if let asm = names.last(where: { $0.hasPrefix("asm_") }) {
            return (asm.hasPrefix("asm_exc_") ? "exception " : "interrupt ") + asm.dropFirst(4)
        }
        return "other (kernel threads' work, cut chains)"
    }

    /// The system call a C library wrapper makes: `__GI___writev` → `writev`,
    /// `__fcntl64_nocancel_adjusted` → `fcntl64`, `__futex_abstimed_wait_common64` → `futex (wait)`.
    static func systemCall(wrapper: String) -> String {
        if wrapper.contains("futex") || wrapper.contains("lll_lock") {
            return wrapper.contains("wake") ? "futex (wake)" : "futex (wait)"
        }
        var name = Substring(wrapper)
        for prefix in ["__GI_", "__libc_", "__"] where name.hasPrefix(prefix) { name = name.dropFirst(prefix.count) }
        name = name.drop { $0 == "_" }
        for suffix in ["_nocancel_adjusted", "_nocancel"] where name.hasSuffix(suffix) { name = name.dropLast(suffix.count) }
        if name.hasPrefix("libc_") { name = name.dropFirst(5) }
        return String(name)
    }

    /// The `count` ways into the kernel with the most samples, each with its share of all samples and,
    /// given herald-api's CPU per send, its microseconds of that.
    func kernelLines(_ count: Int, perSend: Double?) -> [String] {
        guard samples > 0 else { return [] }
        return kernelEntries.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }.prefix(count).map {
            let share = Double($0.value) / Double(samples)
            return $0.key.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%5.1f %%  ", share * 100)
                + (perSend.map { String(format: "%5.1f µs", share * $0) } ?? "")
        }
    }

    /// The `count` functions with the most samples taken in them, with their share.
    func topSelf(_ count: Int) -> [String] {
        selfCounts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }.prefix(count).map {
            String(format: "%5.2f%%  ", Double($0.value) / Double(samples) * 100) + String($0.key.prefix(110))
        }
    }

    /// One line per stage with samples, largest first: its share and, given herald-api's CPU per send
    /// in the same stack's load runs, its microseconds of that; then the kernel's share across them.
    func lines(perSend: Double?) -> [String] {
        guard samples > 0 else { return [] }
        func line(_ name: String, _ count: Int) -> String {
            let share = Double(count) / Double(samples)
            return name.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%5.1f %%  ", share * 100)
                + (perSend.map { String(format: "%5.0f µs", share * $0) } ?? "")
        }
        let named = (Self.stages.map(\.name) + [Self.other]).compactMap { name in counts[name].map { (name, $0) } }
        return named.sorted { $0.1 > $1.1 }.map { line($0.0, $0.1) } + [line("in the kernel, across the stages", kernelSamples)]
    }
}
