import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldStore

/// Scans for operators and reports (the status page's queue ages and listings, the conversion gauges)
/// run beside the writes, not as calls of SQLite's writer batches: there, with 200,000 sessions in the
/// last hour, the once-a-minute conversion report would hold every write for about a tenth of a second.
@Suite("Operator reads beside the writes")
struct OperatorReadTests {
    @Test("a write commits while an operator's read is still running", arguments: StoreKind.sql)
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

extension OperatorReadTests {
    /// Sessions have no index of their creation time (every send paid an entry in it); the report reads
    /// the primary key's range from the id floor. A day of sessions and statistics first (ANALYZE), so
    /// each planner chooses as it would on a real table.
    @Test("the conversion report reads the last hour's sessions by their ids' time, not the whole table", arguments: StoreKind.sql)
    func conversionReadsTheIDRange(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, opened in
            let store = try #require(opened as? SQLStore)
            let since = Date().addingTimeInterval(-3_600)
            let floor = SessionToken.storageIDFloor(createdAt: since)
            // 20,000 sessions 4.32 s apart, the last 834 of them from `since` on; ids as sends make them
            // (the creation time's 12 hex digits, then 52 more).
            let first = since.millisecondsSince1970 - 82_800_000
            let plan = try await store.run { db -> String in
                let (id, hash) =
                    db.dialect == .sqlite
                    ? ("printf('%012x', t) || lower(hex(randomblob(26)))", "x'01'") : ("lpad(to_hex(t), 12, '0') || md5(n::text)", "'\\x01'::bytea")
                let numbers =
                    db.dialect == .sqlite
                    ? "WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < 20000) SELECT n FROM numbers"
                    : "SELECT n FROM generate_series(1, 20000) AS n"
                try db.query(
                    """
                    INSERT INTO verification_sessions (id, project_id, phone_number, code_hash, created_at_ms, expires_at_ms, max_attempts, job_id, region)
                    SELECT \(id), 'p', '+1', \(hash), t, t + 300000, 5, 'j', 'US'
                    FROM (SELECT n, \(first) + n * 4320 AS t FROM (\(numbers)) AS numbers) AS s
                    """)
                try db.query(db.dialect == .sqlite ? "ANALYZE" : "ANALYZE verification_sessions")
                guard db.dialect == .postgres else {
                    return try db.query("EXPLAIN QUERY PLAN " + SQLStore.conversionQuery, [.text(floor), .integer(since.millisecondsSince1970)])
                        .compactMap { $0.last?.string }.joined(separator: "\n")
                }
                let statement = SQLStore.conversionQuery.replacingOccurrences(of: "?1", with: "'\(floor)'")
                    .replacingOccurrences(of: "?2", with: "\(since.millisecondsSince1970)")
                return try db.query("EXPLAIN " + statement).compactMap { $0.first?.string }.joined(separator: "\n")
            }
            #expect(plan.contains(kind == .sqlite ? "sqlite_autoindex_verification_sessions_1 (id>?)" : "verification_sessions_pkey"), "\(plan)")
            // The report counts the hour's sessions, none of the day's before.
            let sent = try await store.conversion(since: since).reduce(0) { $0 + $1.sent }
            #expect(sent == (1...20_000).count { first + Int64($0) * 4_320 >= since.millisecondsSince1970 })
        }
    }
}
