import HeraldCore
import Logging
import Testing

@testable import HeraldStore

@Suite("Lease deadlines: one sweep instead of a timer per call", .timeLimit(.minutes(1)))
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

    @Test("a PostgreSQL that cannot be reached fails a call as unavailable instead of holding it, and the pool is closed")
    func unreachableDatabase() async throws {
        let location = StoreLocation.PostgresLocation(
            host: "127.0.0.1", port: 1, user: "herald", password: nil, database: "herald", sslMode: .disable, schema: nil)
        let backend = try PostgresBackend(
            location: location, poolSize: 4, caFile: nil, leaseTimeout: .milliseconds(300), logger: Logger(label: "test"))
        for _ in 0..<3 {
            let error = await #expect(throws: StoreError.self) { try await backend.statement("SELECT 1", []) }
            #expect(error?.kind == .unavailable, "\(String(describing: error))")
        }
        await backend.close()
    }
}
