import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Testing

@testable import HeraldStore

@Suite("PostgreSQL's hot-path routines", .timeLimit(.minutes(1)))
struct PostgresRoutinesTests {
    /// A plan PL/pgSQL cached while a table was small must not go on scanning it once it is large (see
    /// `PostgresRoutines`): every routine carries `enable_seqscan = off` in the database itself.
    @Test("every routine is stored with enable_seqscan = off, so a plan cached on a small table never scans a large one")
    func noSequentialScans() async throws {
        let (store, url, _) = try await Self.freshStore(migrate: true)
        let rows = try await store.run { db in
            try db.query(
                """
                SELECT p.proname, array_to_string(p.proconfig, ',') FROM pg_proc p
                WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'herald\\_%' ORDER BY p.proname
                """)
        }
        await store.close()
        await TestStore.dropSchema(of: url)
        let settings = Dictionary(uniqueKeysWithValues: rows.compactMap { row in row.first?.string.map { ($0, row[1].string ?? "") } })
        #expect(settings.keys.sorted() == ["herald_admit_send_v1", "herald_batch_v6", "herald_refund_v1"])
        for (name, setting) in settings {
            #expect(setting.contains("enable_seqscan=off"), "\(name): \(setting)")
        }
    }

    /// The batch call is a prepared statement (`PostgresBackend.prepared`), and postgres-nio remembers a
    /// failed preparation for the connection's life: without closing that connection, a process that
    /// once called before its routines existed would fail every later batch on it.
    @Test("a batch call that failed before the routines existed does not fail the next on the same connection")
    func failedPreparationIsForgotten() async throws {
        let (store, url, schema) = try await Self.freshStore(migrate: false)
        func record() async throws {
            try await store.recordDelivery(
                jobID: UUID(), status: .sent, reason: nil, segments: nil, providerMessageID: nil, detail: nil, now: Date())
        }
        await #expect(throws: StoreError.self) { try await record() }
        try await store.migrate(schema: schema)
        try await record()
        await store.close()
        await TestStore.dropSchema(of: url)
    }

    @Test("in one batch that names a job twice (the routine's loop), an uncertain after the outcome leaves the outcome")
    func uncertainAfterOutcomeInOneBatch() async throws {
        let (store, url, _) = try await Self.freshStore(migrate: true)
        let job = UUID()
        let now = Date()
        try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+447700900123", now: now)
        _ = try await store.claimDelivery(
            jobID: job, projectID: "p", type: .sms, destination: "+447700900123", owner: "w1",
            description: DeliveryDescription(template: nil, locale: nil, provider: nil, producer: nil), now: now, reclaimInDoubt: false)
        let batch = PostgresBatcher.body([
            .record(jobID: job, status: .sent, reason: nil, segments: nil, providerMessageID: nil, event: "", now: now),
            .record(jobID: job, status: .uncertain, reason: "in doubt", segments: nil, providerMessageID: nil, event: "", now: now),
        ])
        let rows = try await store.backend.statement("SELECT idx, verdict FROM herald_batch_v6(?::jsonb)", [.text(batch)])
        #expect(rows.map { $0[1].string } == ["done", "done"])
        #expect(try await store.deliveryStatus(jobID: job)?.status == .sent)
        await store.close()
        await TestStore.dropSchema(of: url)
    }

    /// A store on a fresh schema of the suite's PostgreSQL, with one connection: every call runs on it (or on
    /// the pool's replacement of it). A long wait for the connection, as StoreFixture's: under the whole
    /// suite one took over 5 s.
    static func freshStore(migrate: Bool) async throws -> (store: SQLStore, url: String, schema: String?) {
        let url = try #require(try TestStore.postgres.freshURL())
        let location = try StoreLocation(parsing: url)
        guard case .postgres(let postgres) = location else { throw TestFailure("not a PostgreSQL URL: \(url)") }
        let store = try await SQLStore.open(
            HeraldConfiguration.Store(url: url, location: location, poolSize: 1, connectTimeout: .seconds(60)), migrate: migrate,
            logger: Logger(label: "test"))
        return (store, url, postgres.schema)
    }
}
