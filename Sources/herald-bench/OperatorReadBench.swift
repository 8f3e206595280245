import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting

extension HeraldBenchCommand {
    /// (r) What an operator's scan costs the sends beside it: `reportRows` sessions and waiting jobs of
    /// the last hour, then the once-a-minute conversion report and the status page's oldest waiting job,
    /// each timed together with one write issued while it runs (on SQLite the writes are one queue of
    /// batches; a scan run among them would hold that write until it ended); then housekeeping's purge
    /// of expired sessions, whose deletes are writes and go in chunks.
    func operatorReadStalls(_ store: SQLStore, kind: TestStore) async throws {
        let now = Date()
        let rows = max(1, reportRows)
        let filled = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask {
                    for index in stride(from: lane, to: rows, by: 64) {
                        let at = now.addingTimeInterval(-3000 * Double(rows - index) / Double(rows))
                        let jobID = UUID()
                        try await store.insertSession(Self.reportSession(index: index, at: at, jobID: jobID))
                        try await store.recordPending(
                            jobID: jobID, projectID: "bench", type: .sms, destination: "+1555\(4_000_000 + index)", producer: nil, now: at)
                    }
                }
            }
            try await group.waitForAll()
        }
        print(
            String(
                format: "(r) [%@] %d sessions and waiting jobs of the last hour written in %.1f s", kind.rawValue, rows,
                (ContinuousClock.now - filled).seconds))
        let reads: [(String, @Sendable () async throws -> Void)] = [
            ("conversion report (sessions of the last hour by country)", { _ = try await store.conversion(since: now.addingTimeInterval(-3600)) }),
            ("oldest waiting job (status page)", { _ = try await store.oldestWaiting(type: .sms) }),
        ]
        for (label, scan) in reads {
            var scans: [Double] = []
            var writes: [Double] = []
            for round in 0..<5 {
                let started = ContinuousClock.now
                async let scanned: Void = scan()
                // Issued once the scan is under way.
                try await Task.sleep(for: .milliseconds(5))
                let writing = ContinuousClock.now
                try await store.insertSession(Self.reportSession(index: rows + round, at: Date(), jobID: UUID()))
                writes.append((ContinuousClock.now - writing).seconds * 1000)
                try await scanned
                scans.append((ContinuousClock.now - started).seconds * 1000)
            }
            print(
                String(
                    format: "(r) [%@] %@: %@ ms; a write issued during it took %@ ms", kind.rawValue, label, Self.medianRange(scans),
                    Self.medianRange(writes)))
        }
        // Housekeeping's purge of expired sessions, once a minute: a minute's sends at 500/s.
        var purges: [Double] = []
        var writes: [Double] = []
        for round in 0..<3 {
            let expired = now.addingTimeInterval(-90_000)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<64 {
                    group.addTask {
                        for index in stride(from: lane, to: 30_000, by: 64) {
                            try await store.insertSession(Self.reportSession(index: rows + 10 + round * 30_000 + index, at: expired, jobID: UUID()))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let started = ContinuousClock.now
            async let purged = store.purgeSessions(expiredBefore: now.addingTimeInterval(-86_400))
            try await Task.sleep(for: .milliseconds(5))
            let writing = ContinuousClock.now
            try await store.insertSession(Self.reportSession(index: rows + round, at: Date(), jobID: UUID()))
            writes.append((ContinuousClock.now - writing).seconds * 1000)
            guard try await purged == 30_000 else { throw TestFailure("the purge missed expired sessions") }
            purges.append((ContinuousClock.now - started).seconds * 1000)
        }
        print(
            String(
                format: "(r) [%@] purge of 30,000 expired sessions (a minute's at 500 sends/s): %@ ms; a write issued during it took %@ ms",
                kind.rawValue, Self.medianRange(purges), Self.medianRange(writes)))
        // The ledger's purge: one statement of `ledgerChunk` rows past the retention, as housekeeping runs them.
        var chunks: [Double] = []
        var ledgerWrites: [Double] = []
        let old = now.addingTimeInterval(-31 * 86_400)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask {
                    for index in stride(from: lane, to: 5 * ledgerChunk, by: 64) {
                        try await store.recordPending(
                            jobID: UUID(), projectID: "bench", type: .sms, destination: "+1555\(6_000_000 + index)", producer: nil, now: old)
                    }
                }
            }
            try await group.waitForAll()
        }
        for round in 0..<5 {
            let started = ContinuousClock.now
            async let purged = store.purgeMessages(updatedBefore: now.addingTimeInterval(-30 * 86_400), limit: ledgerChunk)
            try await Task.sleep(for: .milliseconds(1))
            let writing = ContinuousClock.now
            try await store.insertSession(Self.reportSession(index: rows + 100 + round, at: Date(), jobID: UUID()))
            ledgerWrites.append((ContinuousClock.now - writing).seconds * 1000)
            guard try await purged == ledgerChunk else { throw TestFailure("the ledger purge missed rows past the retention") }
            chunks.append((ContinuousClock.now - started).seconds * 1000)
        }
        print(
            String(
                format: "(r) [%@] one ledger purge statement (%d rows past the retention): %@ ms; a write issued during it took %@ ms",
                kind.rawValue, ledgerChunk, Self.medianRange(chunks), Self.medianRange(ledgerWrites)))
    }

    /// Rows per ledger purge statement (`StoreMaintenance.purgeChunk` in herald-api).
    var ledgerChunk: Int { 1_000 }

    static func reportSession(index: Int, at: Date, jobID: UUID) -> VerificationSession {
        VerificationSession(
            id: UUID().uuidString, projectID: "bench", phoneNumber: "+1555\(4_000_000 + index)", region: index % 3 == 0 ? "US" : "DE",
            codeHash: Data(repeating: 7, count: 32), createdAt: at, expiresAt: at.addingTimeInterval(600), maxAttempts: 5, jobID: jobID)
    }

    /// "median [lowest–highest]".
    static func medianRange(_ values: [Double]) -> String {
        let sorted = values.sorted()
        guard let low = sorted.first, let high = sorted.last else { return "none" }
        return String(format: "%.1f [%.1f–%.1f]", sorted[sorted.count / 2], low, high)
    }
}
