import Foundation
import HeraldAMQP
import HeraldCore

/// What the status page asks of the broker: queue figures, dead letters, replays. A port, so the page
/// renders (with "broker not connected") in tests without one.
public protocol BrokerConsole: Sendable {
    /// Every queue of `type` (work, retry, throttle, dead) with ready messages and consumers.
    func queues(_ type: JobType) async throws -> [(name: String, ready: Int, consumers: Int)]
    /// The consumers of `queue` with what each holds unacknowledged; nil when the broker cannot say
    /// (no `amqp.managementUrl`: AMQP counts consumers but does not name them).
    func consumers(of queue: String) async throws -> [BrokerManagement.Consumer]?
    /// Up to `limit` dead-lettered jobs of `type`, left in place.
    func deadLetters(_ type: JobType, limit: Int) async throws -> [DeadLetterSummary]
    /// Replays all (up to `limit`) or one dead-lettered job; returns how many.
    func replay(_ type: JobType, id: String?, limit: Int, resetLedger: @escaping @Sendable (UUID) async throws -> Void) async throws -> Int
}

/// One dead-lettered job as the status page lists it (destination masked).
public struct DeadLetterSummary: Sendable {
    public var id: String
    public var failedAt: String
    public var reason: String
    public var to: String
}

/// The console over herald-api's own broker connection.
struct AMQPBrokerConsole: BrokerConsole {
    let connection: AMQPConnection
    let topology: Topology
    let management: BrokerManagement?

    func consumers(of queue: String) async throws -> [BrokerManagement.Consumer]? {
        guard let management else { return nil }
        return try await management.consumers(of: queue)
    }

    func queues(_ type: JobType) async throws -> [(name: String, ready: Int, consumers: Int)] {
        var figures: [(name: String, ready: Int, consumers: Int)] = []
        for queue in topology.queues(type) {
            let (ready, consumers) = try await connection.perform { try $0.inspectQueue(queue) }
            figures.append((queue, ready, consumers))
        }
        return figures
    }

    func deadLetters(_ type: JobType, limit: Int) async throws -> [DeadLetterSummary] {
        try await connection.peek(topology.deadQueue(type), limit: limit).map { message in
            let to = (try? JobCodec.decode(message.body)).map { MaskedDestination.mask($0.recipient, type: $0.type) }
            return DeadLetterSummary(
                id: message.messageID ?? "-", failedAt: message.headerText(JobHeader.failedAt) ?? "-",
                reason: message.headerText(JobHeader.reason) ?? "-", to: to ?? "-")
        }
    }

    func replay(_ type: JobType, id: String?, limit: Int, resetLedger: @escaping @Sendable (UUID) async throws -> Void) async throws -> Int {
        try await DeadLetters.replay(connection: connection, topology: topology, type: type, id: id, limit: limit, resetLedger: resetLedger)
    }
}
