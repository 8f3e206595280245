import Foundation
import HeraldCore

/// Publishes jobs to the exchange with the schema-v1 envelope: persistent, mandatory, confirmed.
public struct AMQPJobPublisher: JobPublisher {
    let connection: AMQPConnection
    let topology: Topology

    public init(connection: AMQPConnection, topology: Topology) {
        self.connection = connection
        self.topology = topology
    }

    public func publish(_ job: Job, traceparent: TraceParent) async throws {
        try await connection.publish(Self.message(for: job, topology: topology, traceparent: traceparent))
    }

    /// The AMQP message for a job (also used by tests and producers written in Swift).
    public static func message(for job: Job, topology: Topology, traceparent: TraceParent, attempt: Int = 0) -> AMQPOutgoingMessage {
        AMQPOutgoingMessage(
            exchange: topology.exchange, routingKey: job.type.rawValue, body: JobCodec.encode(job),
            messageID: job.id.uuidString.lowercased(), type: job.type.rawValue,
            headers: [
                "x-herald-schema": .int(Int64(Job.schemaVersion)),
                "x-herald-attempt": .int(Int64(attempt)),
                "traceparent": .string(traceparent.description),
            ],
            timestamp: job.createdAt)
    }
}
