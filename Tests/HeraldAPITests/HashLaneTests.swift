import Foundation
import Synchronization
import Testing

@testable import HeraldAPI

@Suite("Hash lane: at most its permits at once, each on a thread of its own at nice 19")
struct HashLaneTests {
    final class Seen: Sendable {
        let running = Mutex(0)
        let most = Mutex(0)
        let priorities = Mutex([Int32]())
    }

    @Test("eight hashes through two permits: never more than two at once, none on the caller's thread, all run")
    func bounded() async throws {
        let lane = HashLane(permits: 2)
        let seen = Seen()
        let callerThread = pthread_self()
        let results = try await withThrowingTaskGroup(of: Bool.self, returning: [Bool].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await lane.run {
                        let now = seen.running.withLock { count in
                            count += 1
                            return count
                        }
                        seen.most.withLock { $0 = max($0, now) }
                        seen.priorities.withLock { $0.append(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)) }
                        Thread.sleep(forTimeInterval: 0.02)
                        seen.running.withLock { $0 -= 1 }
                        return pthread_equal(pthread_self(), callerThread) == 0
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 8 && results.allSatisfy { $0 }, "every hash ran, on a thread other than the caller's")
        #expect(seen.most.withLock { $0 } == 2, "two at once, never more")
        #expect(seen.priorities.withLock { $0 } == Array(repeating: 19, count: 8), "each at nice 19")
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0, "the caller's thread keeps its priority")
    }
}
