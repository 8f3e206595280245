import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldStore

/// The WAL of a SQLite store that two processes write to without pause (herald-api's sends, a worker's
/// claims and outcomes).
@Suite("SQLite WAL under load")
struct SQLiteCheckpointTests {
    @Test("two processes writing back to back keep the WAL short: it starts over instead of growing to the autocheckpoint threshold")
    func walStaysShort() async throws {
        let fixture = try StoreFixture(.sqlite)
        let first = try await fixture.openSQL()
        let second = try await fixture.openSQL()
        let wal = fixture.location + "-wal"
        let sessions = 40_000
        let written = Counter()
        let deadline = ContinuousClock.now + .seconds(60)
        var largest: Int64 = 0
        var restarts = WALRestarts()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Eight callers per process keep each one's group commit busy; random ids and numbers put
            // every session on pages of their own, so each commit writes many frames.
            for store in [first, second] {
                for _ in 0..<8 {
                    group.addTask {
                        while written.next() < sessions, ContinuousClock.now < deadline {
                            let now = Date()
                            try await store.insertSession(
                                VerificationSession(
                                    id: UUID().uuidString, projectID: "p", phoneNumber: "+1555\(Int.random(in: 1_000_000...9_999_999))",
                                    region: "US", codeHash: Data(repeating: 1, count: 32), createdAt: now, expiresAt: now.addingTimeInterval(300),
                                    maxAttempts: 5, jobID: UUID()))
                        }
                    }
                }
            }
            while written.value < sessions, ContinuousClock.now < deadline {
                largest = max(largest, Self.size(of: wal))
                restarts.sample(wal)
                try await Task.sleep(for: .milliseconds(20))
            }
            try await group.waitForAll()
        }
        #expect(written.value >= sessions)
        // Before the checkpointer's restarts, the same run grew the WAL past 500 MiB: no write transaction
        // ever began with every frame copied, so it never began again from the start. With them it peaks
        // at 15–44 MiB, and the samples every 20 ms see it start over 18–19 times. The size bound leaves
        // room for a loaded machine (a full parallel suite once took this test 31 s, against 2, and the
        // WAL to 128 MiB); the restarts counted are what show the mechanism.
        #expect(restarts.count >= 5, "the WAL started over \(restarts.count) times")
        #expect(largest < 256 << 20, "the WAL reached \(largest >> 20) MiB")
        await fixture.tearDown(first, second)
    }

    @Test(
        "the checkpointer asks for a restart from the threshold on, not while its own process reads, and after one that readers held up waits ten turns"
    )
    func restartPolicy() {
        var policy = WALRestartPolicy()
        var asked: [Bool] = []
        asked.append(policy.shouldRestart(framesInWAL: 999))
        asked.append(policy.shouldRestart(framesInWAL: 1_000))
        policy.restartEnded(completed: true)
        asked.append(policy.shouldRestart(framesInWAL: 5_000))
        #expect(asked == [false, true, true])
        policy.restartEnded(completed: false)
        // A long reader: ten turns without asking, however long the WAL grows meanwhile.
        let held = (0..<11).map { _ in policy.shouldRestart(framesInWAL: 50_000) }
        #expect(held == Array(repeating: false, count: 10) + [true])
        policy.restartEnded(completed: true)
        let short = policy.shouldRestart(framesInWAL: 10)
        #expect(short == false)
        // While this process's own read connection is inside a read, a restart would only wait for it.
        let beside = [policy.shouldRestart(framesInWAL: 5_000, readerOpen: true), policy.shouldRestart(framesInWAL: 5_000, readerOpen: false)]
        #expect(beside == [false, true])
    }

    static func size(of path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// Counts how often a WAL started over, from its header: SQLite writes a new checkpoint sequence
/// number (bytes 12–15) each time a writer begins the file again from its first frame.
private struct WALRestarts {
    private(set) var count = 0
    private var last: [UInt8]?

    mutating func sample(_ path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 16), header.count == 16 else { return }
        let sequence = Array(header[12..<16])
        if let last, last != sequence { count += 1 }
        last = sequence
    }
}

/// Sessions claimed so far, shared by the writing tasks.
private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    /// Claims one more; returns how many were claimed before it.
    func next() -> Int {
        count.withLock { count in
            defer { count += 1 }
            return count
        }
    }
}
