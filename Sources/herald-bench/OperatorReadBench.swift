import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Synchronization

extension Bench {
    /// (r) What an operator's scan or housekeeping's purge costs the sends beside it: `reportRows`
    /// sessions and waiting jobs of the last hour, then the once-a-minute conversion report and the
    /// status page's oldest waiting job, each timed together with one write issued while it runs (on
    /// SQLite the writes are one queue of batches; a scan run among them would hold that write until
    /// it ended); then the purges of expired sessions and of the ledger, whose deletes are writes and go
    /// in chunks.
    func operatorReadStalls(_ store: SQLStore, kind: TestStore) async throws {
        let now = Date()
        let rows = max(1, reportRows)
        let filled = ContinuousClock.now
        try await Self.inLanes(rows) { index in
            let at = now.addingTimeInterval(-3000 * Double(rows - index) / Double(rows))
            let jobID = UUID()
            try await store.insertSession(Self.reportSession(index: index, at: at, jobID: jobID))
            try await store.recordPending(
                jobID: jobID, projectID: "bench", type: .sms, destination: "+1555\(4_000_000 + index)", producer: nil, now: at)
        }
        print(
            String(
                format: "(r) [%@] %d sessions and waiting jobs of the last hour written in %.1f s", kind.rawValue, rows,
                (ContinuousClock.now - filled).seconds))
        // A pass after the first reads again only the minutes a default code life (5 m) can still change.
        var window = ConversionWindow(settle: .seconds(360))
        window.take([], now: now.addingTimeInterval(-60))
        let rescanFrom = window.scanStart(now: now)
        let reads: [(String, @Sendable () async throws -> Void)] = [
            (
                "conversion report, first pass (sessions of the last hour by minute and country)",
                { _ = try await store.conversion(since: now.addingTimeInterval(-3600)) }
            ),
            ("conversion report, later passes (the last 7 minutes)", { _ = try await store.conversion(since: rescanFrom) }),
            ("oldest waiting job (status page)", { _ = try await store.oldestWaiting(type: .sms) }),
        ]
        for (label, scan) in reads {
            let (scans, writes) = try await Self.besideOneWrite(store, rounds: 5, prepare: {}, scan)
            print(
                String(
                    format: "(r) [%@] %@: %@ ms; a write issued during it took %@ ms", kind.rawValue, label, Self.medianRange(scans),
                    Self.medianRange(writes)))
        }
        // Housekeeping's purge of expired sessions: one statement of each size, then whole passes.
        let expiredAt = now.addingTimeInterval(-90_000)
        try await Self.inLanes(5 * 500 + 5 * Self.sessionChunk) { index in
            try await store.insertSession(Self.reportSession(index: index, at: expiredAt, jobID: UUID()))
        }
        for chunk in [Self.sessionChunk, 500] {
            let (statements, writes) = try await Self.besideOneWrite(store, rounds: 5, prepare: {}) {
                guard try await store.purgeSessions(expiredBefore: now.addingTimeInterval(-86_400), limit: chunk) == chunk else {
                    throw TestFailure("the purge missed expired sessions")
                }
            }
            print(
                String(
                    format: "(r) [%@] one purge statement of %d expired sessions: %@ ms; a write issued during it took %@ ms", kind.rawValue,
                    chunk, Self.medianRange(statements), Self.medianRange(writes)))
        }
        try await purgePasses(store, kind: kind, now: now)
        try await purgeCPU(store, kind: kind, now: now)
        try await rateKeyWalk(store, kind: kind, now: now)
        // The ledger's purge: one statement of `ledgerChunk` rows past the retention, as housekeeping runs them.
        try await Self.inLanes(5 * Self.ledgerChunk) { index in
            try await store.recordPending(
                jobID: UUID(), projectID: "bench", type: .sms, destination: "+1555\(6_000_000 + index)", producer: nil,
                now: now.addingTimeInterval(-31 * 86_400))
        }
        let (chunks, ledgerWrites) = try await Self.besideOneWrite(store, rounds: 5, prepare: {}) {
            guard try await store.purgeMessages(updatedBefore: now.addingTimeInterval(-30 * 86_400), limit: Self.ledgerChunk) == Self.ledgerChunk
            else { throw TestFailure("the ledger purge missed rows past the retention") }
        }
        print(
            String(
                format: "(r) [%@] one ledger purge statement (%d rows past the retention): %@ ms; a write issued during it took %@ ms",
                kind.rawValue, Self.ledgerChunk, Self.medianRange(chunks), Self.medianRange(ledgerWrites)))
    }

    /// Rows per purge statement, as herald-api's housekeeping deletes them.
    static let ledgerChunk = PurgePacing.ledger.chunk
    static let sessionChunk = PurgePacing.sessions.chunk

    /// A minute's expired sessions at `purgeRows / 60` sends a second, purged while sessions are written
    /// at 500/s, each on its own (open loop, every 2 ms): their answer times during the pass, with
    /// housekeeping's paced statements and with 500-row statements back to back (an unpaced purge),
    /// against the same writes with no purge. Three rounds of each, alternating.
    func purgePasses(_ store: SQLStore, kind: TestStore, now: Date) async throws {
        let rows = max(1, purgeRows)
        let cutoff = now.addingTimeInterval(-86_400)
        let paced = PurgePacing(chunk: Self.sessionChunk, budget: .seconds(600))
        // A pass without pauses: the statements back to back, for comparison.
        let backToBack = PurgePacing(chunk: 500, budget: .seconds(600))
        let ways: [(String, @Sendable () async throws -> Int)] = [
            (
                "no purge",
                {
                    try await Task.sleep(for: .seconds(2))
                    return 0
                }
            ),
            (
                "paced, \(Self.sessionChunk) per statement",
                {
                    try await paced.pass(
                        delete: { try await store.purgeSessions(expiredBefore: cutoff, limit: $0) }, pause: { try? await Task.sleep(for: $0) }
                    ).deleted
                }
            ),
            (
                "back to back, 500 per statement",
                {
                    try await backToBack.pass(delete: { try await store.purgeSessions(expiredBefore: cutoff, limit: $0) }, pause: { _ in }).deleted
                }
            ),
        ]
        var passes: [String: [Double]] = [:]
        var waits: [String: [Double]] = [:]
        for _ in 0..<3 {
            for (label, purge) in ways {
                if label != "no purge" {
                    try await Self.inLanes(rows) { index in
                        try await store.insertSession(Self.reportSession(index: index, at: now.addingTimeInterval(-90_000), jobID: UUID()))
                    }
                }
                let (took, deleted, writes) = try await Self.writesDuring(store, purge)
                guard label == "no purge" || deleted == rows else { throw TestFailure("the pass deleted \(deleted) of \(rows) sessions") }
                passes[label, default: []].append(took)
                waits[label, default: []] += writes
            }
        }
        for (label, _) in ways {
            let times = waits[label] ?? []
            print(
                String(
                    format:
                        "(r) [%@] writes at 500/s during a purge of %d expired sessions, %@: pass %@ ms; writes p50 %.2f, p99 %.2f, max %.1f ms (%d)",
                    kind.rawValue, rows, label, Self.medianRange(passes[label] ?? []), Self.percentile(times, 0.5), Self.percentile(times, 0.99),
                    times.max() ?? .nan, times.count))
        }
    }

    /// What deleting a row costs the process that deletes it (herald-api's housekeeping on SQLite): each
    /// round writes `purgeRows` expired sessions or ledger rows past the retention, then deletes them in
    /// housekeeping's statements with nothing beside, timing this process's CPU (statements, commits,
    /// the checkpointer's copies). Every send leaves one of each, deleted a day and `ledger.retention`
    /// later: the send's cost in steady state includes these.
    func purgeCPU(_ store: SQLStore, kind: TestStore, now: Date) async throws {
        let rows = max(1, purgeRows)
        let retention = now.addingTimeInterval(-30 * 86_400)
        let purges: [(String, PurgePacing, @Sendable (Int) async throws -> Void, @Sendable (Int) async throws -> Int)] = [
            (
                "expired session", .sessions,
                { try await store.insertSession(Self.reportSession(index: $0, at: now.addingTimeInterval(-90_000), jobID: UUID())) },
                { try await store.purgeSessions(expiredBefore: now.addingTimeInterval(-86_400), limit: $0) }
            ),
            (
                "ledger row", .ledger,
                {
                    try await store.recordPending(
                        jobID: UUID(), projectID: "bench", type: .sms, destination: "+1555\(6_000_000 + $0)", producer: nil,
                        now: retention.addingTimeInterval(-86_400))
                },
                { try await store.purgeMessages(updatedBefore: retention, limit: $0) }
            ),
        ]
        for (label, pacing, write, delete) in purges {
            var perRow: [Double] = []
            for _ in 0..<3 {
                try await Self.inLanes(rows, write)
                let before = cpuSeconds(getpid())
                // Housekeeping's statements without its pauses, so only the deletes' CPU is counted.
                let deleted = try await PurgePacing(chunk: pacing.chunk, budget: .seconds(600)).pass(delete: delete, pause: { _ in }).deleted
                guard deleted == rows else { throw TestFailure("the purge deleted \(deleted) of \(rows) rows") }
                perRow.append((cpuSeconds(getpid()) - before) * 1e6 / Double(rows))
            }
            print(
                String(
                    format: "(r) [%@] CPU to delete one %@ (%d per statement, %d rows, nothing beside): %@ µs", kind.rawValue, label,
                    pacing.chunk, rows, Self.medianRange(perRow)))
        }
    }

    /// What housekeeping's walk of the limit keys costs when none has passed: `purgeRows` numbers' live
    /// keys under the default per-number policies (two each), looked through in housekeeping's
    /// statements (`PurgePacing.rateKeys`): the CPU per key with nothing beside, then whole walks with
    /// sessions written at 500/s beside, paced as housekeeping paces them and back to back for
    /// comparison. Every sweep reads every live key (`RateKeySweep`).
    func rateKeyWalk(_ store: SQLStore, kind: TestStore, now: Date) async throws {
        let numbers = max(1, purgeRows)
        let policies = ["5/1h", "10/1d"].compactMap(RatePolicy.parse)
        try await Self.inLanes(numbers) { index in
            let phone = "+1666\(String(format: "%07d", index))"
            let keys = policies.map { policy in
                (key: LimitCheck(kind: .number, scope: "bench", subject: phone, policy: policy).key, parameters: GCRA.Parameters(policy))
            }
            _ = try await store.rateDecisions(keys, now: now.microsecondsSince1970)
        }
        let keys = numbers * policies.count
        // A support lookup of one number without its project (`herald-admin limits show`, the status
        // page), and with it, among those keys.
        let subject = "+1666\(String(format: "%07d", numbers / 2))"
        for project in [nil, "bench"] as [String?] {
            let (lookups, beside) = try await Self.besideOneWrite(store, rounds: 5, prepare: {}) {
                guard try await store.rateStates(kind: "number", subject: subject, project: project).count == policies.count else {
                    throw TestFailure("the lookup missed the number's keys")
                }
            }
            print(
                String(
                    format: "(r) [%@] limits lookup of one number among %d keys, %@: %@ ms; a write issued during it took %@ ms", kind.rawValue,
                    keys, project == nil ? "without its project" : "with its project", Self.medianRange(lookups), Self.medianRange(beside)))
        }
        let before = now.microsecondsSince1970
        // Keys the earlier parts of the suite left, passed by now, go first.
        _ = try await store.purgeRates(before: before)
        let chunk = PurgePacing.rateKeys.chunk
        let paced: @Sendable () async throws -> Int = {
            var after = ""
            var deleted = 0
            _ = try await PurgePacing(chunk: chunk, budget: .seconds(600)).pass(
                delete: { limit in
                    let step = try await store.purgeRates(after: after, limit: limit, before: before)
                    after = step.last ?? after
                    deleted += step.deleted
                    return step.walked
                }, pause: { try? await Task.sleep(for: $0) })
            return deleted
        }
        let ways: [(label: String, walk: @Sendable () async throws -> Int)] = [
            ("paced (since 2026-11-28, a sweep every ten minutes)", paced),
            ("back to back (until then, every minute)", { try await store.purgeRates(before: before, chunk: chunk) }),
        ]
        var perKey: [Double] = []
        var walks: [String: [Double]] = [:]
        var writes: [String: [Double]] = [:]
        for _ in 0..<3 {
            let cpu = cpuSeconds(getpid())
            guard try await store.purgeRates(before: before, chunk: chunk) == 0 else { throw TestFailure("the walk deleted live keys") }
            perKey.append((cpuSeconds(getpid()) - cpu) * 1e9 / Double(keys))
            for way in ways {
                let (took, deleted, beside) = try await Self.writesDuring(store, way.walk)
                guard deleted == 0 else { throw TestFailure("the walk deleted live keys") }
                walks[way.label, default: []].append(took)
                writes[way.label, default: []] += beside
            }
        }
        print(
            String(
                format: "(r) [%@] CPU to look through one live limit key (%d per statement, %d keys, nothing beside): %@ ns", kind.rawValue, chunk,
                keys, Self.medianRange(perKey)))
        for way in ways {
            let times = writes[way.label] ?? []
            print(
                String(
                    format:
                        "(r) [%@] writes at 500/s during a walk of %d live limit keys, %d per statement, %@: walk %@ ms; writes p50 %.2f, p99 %.2f, max %.1f ms (%d)",
                    kind.rawValue, keys, chunk, way.label, Self.medianRange(walks[way.label] ?? []), Self.percentile(times, 0.5),
                    Self.percentile(times, 0.99), times.max() ?? .nan, times.count))
        }
    }

    /// Runs `purge` while writing one session every 2 ms, each write on its own; returns the purge's
    /// milliseconds, what it returned, and each write's milliseconds.
    static func writesDuring(_ store: SQLStore, _ purge: @escaping @Sendable () async throws -> Int) async throws -> (Double, Int, [Double]) {
        let clock = ContinuousClock()
        let started = clock.now
        let done = Mutex<Bool>(false)
        let purging = Task {
            defer { done.withLock { $0 = true } }
            return try await purge()
        }
        let writes = try await withThrowingTaskGroup(of: Double.self) { group in
            var tick = 0
            while done.withLock({ $0 }) == false {
                tick += 1
                try await clock.sleep(until: started + .milliseconds(2 * tick))
                group.addTask {
                    let issued = clock.now
                    try await store.insertSession(reportSession(index: 0, at: Date(), jobID: UUID()))
                    return (clock.now - issued).seconds * 1000
                }
            }
            var all: [Double] = []
            for try await write in group { all.append(write) }
            return all
        }
        let count = try await purging.value
        return ((clock.now - started).seconds * 1000, count, writes)
    }

    /// Runs `body` for `0..<count` on 64 concurrent lanes (so that SQLite's writer commits them in batches).
    static func inLanes(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask { for index in stride(from: lane, to: count, by: 64) { try await body(index) } }
            }
            try await group.waitForAll()
        }
    }

    /// `rounds` times: `prepare`, then `operation` with one session written 1 ms after it began.
    /// Returns each round's milliseconds for the operation and for the write.
    static func besideOneWrite(
        _ store: SQLStore, rounds: Int, prepare: () async throws -> Void, _ operation: @escaping @Sendable () async throws -> Void
    ) async throws -> (operation: [Double], write: [Double]) {
        var operations: [Double] = []
        var writes: [Double] = []
        for _ in 0..<rounds {
            try await prepare()
            let started = ContinuousClock.now
            async let done: Void = operation()
            // Issued once the operation is under way.
            try await Task.sleep(for: .milliseconds(1))
            let writing = ContinuousClock.now
            try await store.insertSession(reportSession(index: 0, at: Date(), jobID: UUID()))
            writes.append((ContinuousClock.now - writing).seconds * 1000)
            try await done
            operations.append((ContinuousClock.now - started).seconds * 1000)
        }
        return (operations, writes)
    }

    static func reportSession(
        index: Int, at: Date, jobID: UUID, projectID: String = "bench", phoneNumber: String? = nil
    ) -> VerificationSession {
        VerificationSession(
            id: SessionToken.issue(at: at).storageID, projectID: projectID, phoneNumber: phoneNumber ?? "+1555\(4_000_000 + index)",
            region: index % 3 == 0 ? "US" : "DE", codeHash: Data(repeating: 7, count: 32), createdAt: at, expiresAt: at.addingTimeInterval(600),
            maxAttempts: 5, jobID: jobID)
    }

    /// "median [lowest–highest]".
    static func medianRange(_ values: [Double]) -> String {
        let sorted = values.sorted()
        guard let low = sorted.first, let high = sorted.last else { return "none" }
        return String(format: "%.1f [%.1f–%.1f]", sorted[sorted.count / 2], low, high)
    }
}
