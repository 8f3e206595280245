import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldStore

/// Scans for operators and reports (the status page's queue ages and listings, the conversion gauges)
/// run beside the writes. On SQLite they used to run as calls of the writer's batches: with 200,000
/// sessions in the last hour the once-a-minute conversion report held every write for 105–124 ms.
@Suite("Operator reads beside the writes")
struct OperatorReadTests {
    @Test("a write commits while an operator's read is still running", arguments: [StoreKind.sqlite, .postgres])
    func readDoesNotHoldWrites(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let store = try await fixture.openSQL()
        let started = Atomic<Bool>(false)
        let wrote = Atomic<Bool>(false)
        async let reading: (sawWrite: Bool, before: Int64, after: Int64) = store.read { db in
            let before = try db.query("SELECT count(*) FROM verification_sessions").first?.first?.int ?? -1
            started.store(true, ordering: .releasing)
            // Held open until the write below has committed; a read run among the writes would keep the
            // write waiting until this gives up.
            let deadline = ContinuousClock.now + .seconds(10)
            while wrote.load(ordering: .acquiring) == false, ContinuousClock.now < deadline { usleep(1_000) }
            let after = try db.query("SELECT count(*) FROM verification_sessions").first?.first?.int ?? -1
            return (wrote.load(ordering: .acquiring), before, after)
        }
        while started.load(ordering: .acquiring) == false { try await Task.sleep(for: .milliseconds(1)) }
        try await store.insertSession(Self.session())
        wrote.store(true, ordering: .releasing)
        let read = try await reading
        #expect(read.sawWrite, "the write waited for the read to end")
        if kind == .sqlite {
            // One read transaction: its second statement still reads the snapshot its first one began.
            #expect(read.before == 0 && read.after == 0)
        }
        // The next read sees the committed write.
        #expect(try await store.read { try $0.query("SELECT count(*) FROM verification_sessions").first?.first?.int } == 1)
        await fixture.tearDown(store)
    }

    @Test("SQLite's read connection refuses writes")
    func readConnectionIsReadOnly() async throws {
        let fixture = try StoreFixture(.sqlite)
        let store = try await fixture.openSQL()
        try await store.insertSession(Self.session())
        await #expect(throws: StoreError.self) {
            try await store.read { try $0.query("DELETE FROM verification_sessions") }
        }
        #expect(try await store.read { try $0.query("SELECT count(*) FROM verification_sessions").first?.first?.int } == 1)
        await fixture.tearDown(store)
    }

    static func session() -> VerificationSession {
        let now = Date()
        return VerificationSession(
            id: UUID().uuidString, projectID: "p", phoneNumber: "+15555550100", region: "US", codeHash: Data(repeating: 1, count: 32),
            createdAt: now, expiresAt: now.addingTimeInterval(300), maxAttempts: 5, jobID: UUID())
    }
}
