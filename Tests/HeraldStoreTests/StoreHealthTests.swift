import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// `StoreHealth`: what herald-api's gauge `herald_store_oldest_snapshot_seconds` and `herald-admin store
/// status` report.
@Suite("The store's own health", .timeLimit(.minutes(1)))
struct StoreHealthTests {
    @Test("SQLite and the memory store hold nothing back", arguments: [StoreKind.sqlite, .memory])
    func nothingHeld(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let held = try await store.oldestSnapshot()
            #expect(held == nil)
        }
    }

    /// The case the gauge is for: a session left idle inside a transaction (a dump, a report, a
    /// forgotten console) keeps its snapshot for as long as it stays open.
    @Test("on PostgreSQL, a transaction another connection leaves open is the oldest snapshot, with its application and state")
    func heldByAnotherConnection() async throws {
        let (store, url, _) = try await PostgresRoutinesTests.freshStore(migrate: true)
        let name = "herald-snapshot-\(UUID().uuidString.prefix(6))"
        let connection = try TestStore.postgresURL() + "?application_name=" + name
        let holder = Task {
            await shellStatus(
                "/usr/lib/postgresql/15/bin/psql -X -q -d \(shellQuoted(connection)) -c 'BEGIN ISOLATION LEVEL REPEATABLE READ'"
                    + " -c 'SELECT count(*) FROM pg_class' -c '\\! sleep 6' -c 'COMMIT'")
        }
        var seen: SnapshotHolder?
        let found = await eventually(timeout: .seconds(15)) {
            seen = try? await store.oldestSnapshot()
            return seen?.application == name && (seen?.seconds ?? 0) >= 1
        }
        #expect(found, "last seen: \(String(describing: seen))")
        #expect(seen?.state == "idle in transaction")
        #expect(await holder.value == 0)
        // Ended: it is nobody's oldest any more (other tests' connections may hold their own a moment).
        #expect(try await store.oldestSnapshot()?.application != name)
        await store.close()
        await TestStore.dropSchema(of: url)
    }
}
