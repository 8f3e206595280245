import Foundation
import HeraldCore

/// At most `permits` password hashes at once, each on a thread of its own, the rest waiting (suspended,
/// holding no thread). A hash is a fixed 20-odd ms of CPU: unbounded, a burst of sign-ins would start a
/// thread per request and crowd the event loops off the cores; bounded at the core count, a burst
/// queues here.
///
/// Bounding alone still lets a burst fill every core. So a hash thread runs at the lowest priority
/// (nice 19): when the machine is short of CPU, the event loops, the cooperative pool and the other
/// processes of the machine get it first and hashes take what is left. Nice 19 rather than
/// SCHED_IDLE: under a flood of sends the hashes still get a small share, so sign-ins slow down
/// instead of stalling. On a VM whose host is slow to hand busy cores back, sends still pay for busy
/// cores whoever keeps them busy (docs/performance.md).
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
        return try await onOwnThread {
            Self.yieldTheCore()
            return try work()
        }
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

    /// Linux gives each thread its own nice value, and `setpriority` with `who` 0 sets the calling
    /// thread's, not the process's. The thread is used for one hash and then ends, so nothing else ever
    /// runs at this priority.
    private nonisolated static func yieldTheCore() {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
    }
}
