import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Testing

/// An answer promises that the send's rows survive a crash, as the broker's confirm promises its job.
@Suite("Store durability: when a commit counts as done")
struct DurabilityTests {
    /// Commits synced only at checkpoints would let a power cut lose answered sessions and ledger rows,
    /// and a worker's claim with them.
    @Test("SQLite's writing connection syncs each commit by default, and only at checkpoints with store.synchronous normal")
    func sqliteSynchronous() async throws {
        let directory = NSTemporaryDirectory() + "herald-durability-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for setting in SQLiteSynchronous.allCases {
            let url = "sqlite:\(directory)/\(setting.rawValue).sqlite"
            let store = try await SQLStore.open(
                StoreSettings(url: url, location: try StoreLocation(parsing: url), synchronous: setting),
                logger: Logger(label: "test"))
            // `status` asks the connection the writes go through, not the configuration.
            #expect(try await store.status().durability == "synchronous=\(setting.rawValue)")
            await store.close()
        }
        // The store's own initialiser (herald-bench, tools) takes the configuration's default.
        let plain = try await onOwnThread { try SQLStore(sqlitePath: directory + "/plain.sqlite") }
        #expect(try await plain.status().durability == "synchronous=full")
        await plain.close()
    }

    @Test("PostgreSQL reports the server's synchronous_commit")
    func postgresSynchronousCommit() async throws {
        let url = try #require(try TestStore.postgres.freshURL())
        let store = try await SQLStore.open(
            StoreSettings(url: url, location: try StoreLocation(parsing: url), poolSize: 1), logger: Logger(label: "test"))
        #expect(try await store.status().durability == "synchronous_commit=on")
        await store.close()
        await TestStore.dropSchema(of: url)
    }
}
