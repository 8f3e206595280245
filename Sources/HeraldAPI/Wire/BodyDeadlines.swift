import NIOCore
import Synchronization

/// Closes a connection whose request body has not arrived whole within its deadline, by one sweep a
/// second instead of a timer per request.
///
/// A timer per request (`scheduleTask` before reading the body, `cancel` after) looked free, but each
/// is scheduled from Swift's pool onto the connection's event loop and cancelled there again: two
/// cross-thread wake-ups of the loop (an eventfd write each) per request, about 3 % of herald-api's
/// CPU per send. Here a read registers in a table under a lock and leaves it when the body is in; the
/// sweep runs on the event loop of the first connection that reads a body. A deadline is therefore late
/// by up to a second.
final class BodyDeadlines: Sendable {
    private struct Reading {
        let deadline: NIODeadline
        let channel: any Channel
    }

    private struct State {
        var nextID = 0
        var reading: [Int: Reading] = [:]
        var sweeping = false
    }

    private let state = Mutex(State())
    let timeout: TimeAmount
    static let sweepInterval = TimeAmount.seconds(1)

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    /// Reads in the table (tests).
    var count: Int { state.withLock { $0.reading.count } }

    /// Runs `read` (the body's collection) with `channel` closed if it has not returned by the deadline.
    func guarding<T>(_ channel: any Channel, _ read: () async throws -> T) async throws -> T {
        let (id, startSweep) = state.withLock { state in
            state.nextID &+= 1
            state.reading[state.nextID] = Reading(deadline: .now() + timeout, channel: channel)
            defer { state.sweeping = true }
            return (state.nextID, state.sweeping == false)
        }
        if startSweep {
            // Weak: the sweep ends with the routes that own this table (an in-process server in a test).
            channel.eventLoop.scheduleRepeatedTask(initialDelay: Self.sweepInterval, delay: Self.sweepInterval) { [weak self] task in
                guard let self else { return task.cancel() }
                sweep(now: .now())
            }
        }
        defer { _ = state.withLock { $0.reading.removeValue(forKey: id) } }
        return try await read()
    }

    /// Closes (and forgets) every connection whose deadline is at or before `now`.
    func sweep(now: NIODeadline) {
        let overdue = state.withLock { state -> [any Channel] in
            let ids = state.reading.compactMap { $0.value.deadline <= now ? $0.key : nil }
            return ids.compactMap { state.reading.removeValue(forKey: $0)?.channel }
        }
        for channel in overdue { channel.close(promise: nil) }
    }
}
