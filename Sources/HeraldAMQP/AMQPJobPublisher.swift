import Crypto
import Foundation
import HeraldCore

/// Publishes jobs to the exchange with the schema-v1 envelope: persistent, mandatory, confirmed, and
/// signed (`x-herald-signature`) so workers can tell them from anything else on the broker.
public struct AMQPJobPublisher: JobPublisher {
    let connection: AMQPConnection
    let topology: Topology
    let signingKey: SymmetricKey

    public init(connection: AMQPConnection, topology: Topology, keys: HeraldKeys) {
        self.connection = connection
        self.topology = topology
        self.signingKey = keys.jobSigning
    }

    public func publish(_ job: Job, traceparent: TraceParent) async throws {
        try await connection.publish(Self.message(for: job, topology: topology, traceparent: traceparent, signingKey: signingKey))
    }

    /// The AMQP message for a job (also used by tests and producers written in Swift).
    public static func message(
        for job: Job, topology: Topology, traceparent: TraceParent, signingKey: SymmetricKey, attempt: Int = 0
    ) -> AMQPOutgoingMessage {
        let body = JobCodec.encode(job)
        return AMQPOutgoingMessage(
            exchange: topology.exchange, routingKey: job.type.rawValue, body: body,
            messageID: job.id.uuidString.lowercased(), type: job.type.rawValue,
            headers: [
                "x-herald-schema": .int(Int64(Job.schemaVersion)),
                "x-herald-attempt": .int(Int64(attempt)),
                "traceparent": .string(traceparent.description),
                JobSignature.header: .string(JobSignature.sign(body, key: signingKey)),
                ForeignJobPolicy.header: .string(HeraldConfiguration.Integrations.heraldAPI),
            ],
            timestamp: job.createdAt)
    }
}
