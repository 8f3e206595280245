import Foundation
import HeraldCore

/// Dead-lettered jobs, as herald-admin and the status page handle them: look without taking, and
/// replay (a copy confirmed before the original is removed).
public enum DeadLetters {
    /// Moves dead-lettered jobs of `type` (all up to `limit`, or only `id`) back to the work queue with
    /// their attempt count reset; `resetLedger` marks each job pending again first so a worker sends it,
    /// `progress` hears (replayed, total) every 100. Returns how many were replayed.
    public static func replay(
        connection: AMQPConnection, topology: Topology, type: JobType, id: String? = nil, limit: Int = 1000,
        resetLedger: @Sendable (UUID) async throws -> Void, progress: (Int, Int) -> Void = { _, _ in }
    ) async throws -> Int {
        let deadQueue = topology.deadQueue(type)
        let total = id == nil ? min(limit, try await connection.perform { try $0.inspectQueue(deadQueue) }.messages) : 1
        var replayed = 0
        var skipped = 0
        while replayed < total {
            guard let message = try await connection.perform({ try $0.get(deadQueue, acknowledge: false) }) else { break }
            if let id, message.messageID?.lowercased() != id.lowercased() {
                // Not the one asked for: it goes back when the channel closes, after the search.
                skipped += 1
                guard skipped < 100_000 else { break }
                continue
            }
            var headers = message.headers.filter { Job.carriedHeaders.contains($0.key) }
            headers[JobHeader.attempt] = .int(0)
            if let jobID = message.messageID.flatMap(UUID.init(parsing:)) { try await resetLedger(jobID) }
            try await connection.publish(
                AMQPOutgoingMessage(
                    exchange: topology.exchange, routingKey: type.rawValue, body: message.body, messageID: message.messageID, type: message.type,
                    contentType: message.contentType, headers: headers))
            try await connection.perform { try $0.ack(message) }
            replayed += 1
            if replayed % 100 == 0, replayed < total { progress(replayed, total) }
        }
        if skipped > 0 { try await connection.perform { try $0.closeAndReopen() } }
        return replayed
    }
}

extension AMQPConnection {
    /// Up to `limit` messages of `queue`, left in place (taken unacknowledged, then handed back by
    /// reopening the channel).
    ///
    /// A quorum queue takes them back after the channel's close is answered, not before, so a replay
    /// run right after a listing could find the queue empty. This returns once the queue holds the
    /// taken messages again beside those left ready (counted before the close), or after `settle`
    /// (someone else may have taken some meanwhile). Counting only the taken ones returned at once from
    /// a limited peek of a longer queue, before the few it took were back.
    public func peek(_ queue: String, limit: Int = 10_000, settle: Duration = .seconds(2)) async throws -> [AMQPDelivery] {
        let (seen, left) = try await perform { channel -> ([AMQPDelivery], Int) in
            var seen: [AMQPDelivery] = []
            while seen.count < limit, let message = try channel.get(queue, acknowledge: false) { seen.append(message) }
            // Ready messages only: the ones taken are unacknowledged until the close.
            let left = seen.isEmpty ? 0 : try channel.inspectQueue(queue).messages
            try channel.closeAndReopen()
            return (seen, left)
        }
        guard seen.isEmpty == false else { return seen }
        let deadline = ContinuousClock.now + settle
        while try await perform({ try $0.inspectQueue(queue).messages }) < left + seen.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return seen
    }
}

extension AMQPDelivery {
    /// A header as text (strings as they are, integers in decimal).
    public func headerText(_ name: String) -> String? {
        switch headers[name] {
        case .string(let text): text
        case .int(let number): String(number)
        default: nil
        }
    }
}
