import Foundation
import HeraldCore
import HeraldStore
import Logging
import Testing

@testable import HeraldAPI

/// herald-api's housekeeping deletes ledger rows unchanged for `ledger.retention`, in chunks, paced.
@Suite("Ledger purge")
struct LedgerPurgeTests {
    @Test("rows past the retention go, in chunks of 1,000 until none is left; younger ones stay")
    func purge() async throws {
        let store = MemoryStore()
        let now = Date()
        let old = now.addingTimeInterval(-31 * 86_400)
        for _ in 0..<2_500 {
            try await store.recordPending(jobID: UUID(), projectID: "p", type: .sms, destination: "+15555550100", now: old)
        }
        let recent = UUID()
        try await store.recordPending(
            jobID: recent, projectID: "p", type: .sms, destination: "+15555550100", now: now.addingTimeInterval(-29 * 86_400))
        let maintenance = StoreMaintenance(
            store: store, retention: .seconds(30 * 86_400), logger: Logger(label: "test"), conversionSettle: .seconds(360))
        try await maintenance.purgeLedger(now: now)
        let left = try await store.messages(MessageQuery(pageSize: 500)).messages
        #expect(left.map(\.id) == [recent])
    }

    /// Rows past the retention in a fresh SQLite store, written concurrently so the writer batches them.
    func sqliteLedger(old count: Int, now: Date) async throws -> (SQLStore, String) {
        let directory = NSTemporaryDirectory() + "herald-purge-\(UUID().uuidString)"
        let store = try await onOwnThread { try SQLStore(sqlitePath: directory + "/herald.sqlite") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    for index in stride(from: lane, to: count, by: 16) {
                        try await store.recordPending(
                            jobID: UUID(), projectID: "p", type: .sms, destination: "+1555\(6_000_000 + index)",
                            now: now.addingTimeInterval(-31 * 86_400))
                    }
                }
            }
            try await group.waitForAll()
        }
        return (store, directory)
    }

    @Test("a pass is not capped at a number of statements: a ledger fed faster than one pass a minute deleted is caught up")
    func manyChunksInOnePass() async throws {
        let now = Date()
        // 61 chunks of 10 and a part: more statements than the 50 a pass used to be allowed.
        let (store, directory) = try await sqliteLedger(old: 615, now: now)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var maintenance = StoreMaintenance(
            store: store, retention: .seconds(30 * 86_400), logger: Logger(label: "test"), conversionSettle: .seconds(360))
        maintenance.pacing = PurgePacing(chunk: 10, budget: .seconds(600))
        try await maintenance.purgeLedger(now: now)
        #expect(try await store.messages(MessageQuery(pageSize: 10)).messages.isEmpty)
        await store.close()
    }

    @Test("a pass whose budget is spent stops with rows left; the next pass goes on")
    func budgetSpent() async throws {
        let now = Date()
        let (store, directory) = try await sqliteLedger(old: 30, now: now)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var maintenance = StoreMaintenance(
            store: store, retention: .seconds(30 * 86_400), logger: Logger(label: "test"), conversionSettle: .seconds(360))
        maintenance.pacing = PurgePacing(chunk: 10, budget: .zero)
        try await maintenance.purgeLedger(now: now)
        #expect(try await store.messages(MessageQuery(pageSize: 50)).messages.count == 20)
        try await maintenance.purgeLedger(now: now)
        #expect(try await store.messages(MessageQuery(pageSize: 50)).messages.count == 10)
        await store.close()
    }
}
