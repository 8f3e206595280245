import Foundation
import HeraldCore

/// At most `permits` password hashes at once, each on a thread of its own, the rest waiting (suspended,
/// holding no thread). A hash is a fixed ~0.1 s of CPU: unbounded, a burst of sign-ins would start a
/// thread per request and crowd the event loops off the cores; bounded at the core count, a burst
/// queues here while every other request keeps its share of the machine.
actor HashLane {
    private let permits: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(permits: Int) {
        self.permits = max(1, permits)
    }

    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await onOwnThread(work)
    }

    private func acquire() async {
        if running < permits {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the permit straight to the next waiter, if any (`running` stays the same).
    private func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
