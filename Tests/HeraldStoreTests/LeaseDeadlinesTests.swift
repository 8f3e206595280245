import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Testing

@testable import HeraldStore

@Suite("PostgreSQL leases without a timer each: deadlines by one sweep, server-side keep-alives", .timeLimit(.minutes(1)))
struct LeaseDeadlinesTests {
    let start = ContinuousClock.now

    /// Starts a wait and returns once it is in the table.
    private func started(_ deadlines: LeaseDeadlines, until deadline: ContinuousClock.Instant) async -> Task<Void, Never> {
        let task = Task { await deadlines.wait(until: deadline) }
        while deadlines.count == 0 { await Task.yield() }
        return task
    }

    @Test("a wait ends when a sweep sees its deadline passed, not before")
    func expiry() async {
        let deadlines = LeaseDeadlines()
        let task = await started(deadlines, until: start + .seconds(10))
        deadlines.expire(now: start + .seconds(9))
        #expect(deadlines.count == 1)
        deadlines.expire(now: start + .seconds(10))
        await task.value
        #expect(deadlines.isEmpty)
    }

    @Test("a cancelled wait ends at once and leaves nothing behind")
    func cancelled() async {
        let deadlines = LeaseDeadlines()
        let task = await started(deadlines, until: start + .seconds(3600))
        task.cancel()
        await task.value
        #expect(deadlines.isEmpty)
        deadlines.expire(now: start + .seconds(7200))
    }

    @Test("a wait cancelled before it starts does not wait at all")
    func cancelledBeforeStart() async {
        let deadlines = LeaseDeadlines()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await deadlines.wait(until: .now + .seconds(3600))
        }
        await task.value
        #expect(deadlines.isEmpty)
    }

    @Test("only the overdue waits of many end")
    func several() async {
        let deadlines = LeaseDeadlines()
        var tasks: [Task<Void, Never>] = []
        for second in 1...6 {
            tasks.append(Task { await deadlines.wait(until: start + .seconds(second)) })
        }
        while deadlines.count < 6 { await Task.yield() }
        deadlines.expire(now: start + .seconds(3))
        for task in tasks.prefix(3) { await task.value }
        #expect(deadlines.count == 3)
        deadlines.expire(now: start + .seconds(6))
        for task in tasks { await task.value }
        #expect(deadlines.isEmpty)
    }

    /// A backend for a PostgreSQL that nothing answers for (port 1), giving up on a lease after 300 ms.
    static func unreachableBackend(poolSize: Int) throws -> PostgresBackend {
        let location = StoreLocation.PostgresLocation(
            host: "127.0.0.1", port: 1, user: "herald", password: nil, database: "herald", sslMode: .disable, schema: nil)
        return try PostgresBackend(
            location: location, poolSize: poolSize, caFile: nil, leaseTimeout: .milliseconds(300), logger: Logger(label: "test"))
    }

    @Test("a PostgreSQL that cannot be reached fails a call as unavailable instead of holding it, and the pool is closed")
    func unreachableDatabase() async throws {
        let backend = try Self.unreachableBackend(poolSize: 4)
        for _ in 0..<3 {
            let error = await #expect(throws: StoreError.self) { try await backend.statement("SELECT 1", []) }
            #expect(error?.kind == .unavailable, "\(String(describing: error))")
            #expect(error?.message.contains("no connection within") == true, "\(String(describing: error))")
        }
        await backend.close()
    }

    @Test("group commit, running on the client's event loop, also fails as unavailable when no connection comes in time")
    func unreachableDatabaseBatch() async throws {
        let backend = try Self.unreachableBackend(poolSize: 2)
        let batcher = PostgresBatcher(backend: backend)
        // Several callers at once: one batch on the loop carries them, and each gets the failure.
        await withTaskGroup(of: StoreError?.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    do {
                        _ = try await batcher.submit(
                            .record(
                                jobID: UUID(), status: .sent, reason: nil, segments: nil, providerMessageID: nil, event: "test",
                                now: Date()))
                        return nil
                    } catch let error as StoreError {
                        return error
                    } catch {
                        return StoreError(.failed, "\(error)")
                    }
                }
            }
            for await error in group {
                #expect(error?.kind == .unavailable, "\(String(describing: error))")
            }
        }
        await backend.close()
    }

    @Test("the pool's connections ask the server for TCP keep-alives, since the pool runs no keep-alive query")
    func serverKeepAlives() async throws {
        guard case .postgres(let location) = try StoreLocation(parsing: TestStore.postgresURL()) else {
            Issue.record("the suite's PostgreSQL URL is not postgres://")
            return
        }
        let backend = try PostgresBackend(location: location, poolSize: 2, caFile: nil, leaseTimeout: .seconds(10), logger: Logger(label: "test"))
        let rows = try await backend.statement(
            "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'), current_setting('tcp_keepalives_count')",
            [])
        #expect(rows.first?.compactMap(\.string) == ["30", "10", "3"])
        await backend.close()
    }
}
