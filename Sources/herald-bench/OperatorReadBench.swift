import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting

extension HeraldBenchCommand {
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
        // Housekeeping's purge of expired sessions, once a minute: a minute's sends at 500/s.
        let expired = 30_000
        let (purges, purgeWrites) = try await Self.besideOneWrite(
            store, rounds: 3,
            prepare: {
                try await Self.inLanes(expired) { index in
                    try await store.insertSession(Self.reportSession(index: index, at: now.addingTimeInterval(-90_000), jobID: UUID()))
                }
            },
            {
                guard try await store.purgeSessions(expiredBefore: now.addingTimeInterval(-86_400)) == expired else {
                    throw TestFailure("the purge missed expired sessions")
                }
            })
        print(
            String(
                format: "(r) [%@] purge of %d expired sessions (a minute's at 500 sends/s): %@ ms; a write issued during it took %@ ms",
                kind.rawValue, expired, Self.medianRange(purges), Self.medianRange(purgeWrites)))
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

    /// Rows per ledger purge statement, as herald-api's housekeeping deletes them.
    static let ledgerChunk = PurgePacing().chunk

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
            id: UUID().uuidString, projectID: projectID, phoneNumber: phoneNumber ?? "+1555\(4_000_000 + index)",
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
