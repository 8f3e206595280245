import Synchronization

/// Deadlines for the waits on a pooled connection, checked by one sweep instead of a timer per call.
///
/// A `Task.sleep` raced against each lease looked free, but a cancelled sleep keeps its timer (and
/// the task's allocation) until the moment it would have fired: at 2,000 leases per second and a
/// 10 s lease timeout that was 20,000 dead timers, about 12 MiB that grew with the load. Here a wait
/// is a continuation in a table; `expire(now:)`, called every sweep, resumes the overdue ones, and a
/// cancelled wait leaves the table at once. A deadline is therefore late by up to one sweep interval.
final class LeaseDeadlines: Sendable {
    private struct Waiting {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var nextID = 0
        /// Waits that have started but not yet stored their continuation.
        var starting: Set<Int> = []
        /// Of those, the ones cancelled meanwhile: they resume as soon as they arrive.
        var cancelledWhileStarting: Set<Int> = []
        var waiting: [Int: Waiting] = [:]
    }

    private let state = Mutex(State())

    /// Waits in the table (tests).
    var count: Int { state.withLock { $0.waiting.count } }
    /// Nothing waiting, starting or remembered as cancelled (tests).
    var isEmpty: Bool { state.withLock { $0.waiting.isEmpty && $0.starting.isEmpty && $0.cancelledWhileStarting.isEmpty } }

    /// Returns once `deadline` has passed (seen by a later `expire(now:)`) or the calling task is
    /// cancelled, whichever comes first.
    func wait(until deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state in
            state.nextID &+= 1
            state.starting.insert(state.nextID)
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    state.starting.remove(id)
                    if state.cancelledWhileStarting.remove(id) != nil { return true }
                    state.waiting[id] = Waiting(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiting = state.waiting.removeValue(forKey: id) { return waiting.continuation }
                if state.starting.contains(id) { state.cancelledWhileStarting.insert(id) }
                return nil
            }
            continuation?.resume()
        }
    }

    /// Resumes every wait whose deadline is at or before `now`.
    func expire(now: ContinuousClock.Instant) {
        let due = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let ids = state.waiting.compactMap { $0.value.deadline <= now ? $0.key : nil }
            return ids.compactMap { state.waiting.removeValue(forKey: $0)?.continuation }
        }
        for continuation in due { continuation.resume() }
    }
}
