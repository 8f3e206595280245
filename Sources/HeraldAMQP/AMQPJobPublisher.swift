import Crypto
import Foundation
import HeraldCore

/// Publishes jobs to the exchange with the schema-v1 envelope: persistent, mandatory, confirmed, and
/// signed (`x-herald-signature`) so workers can tell them from anything else on the broker.
public struct AMQPJobPublisher: JobPublisher {
    let connection: AMQPConnection
    let topology: Topology
    let signer: KeyedHMAC

    public init(connection: AMQPConnection, topology: Topology, keys: HeraldKeys) {
        self.connection = connection
        self.topology = topology
        self.signer = keys.jobSigner
    }

    public func publish(_ job: Job, traceparent: TraceParent) async throws {
        try await connection.publish(Self.message(for: job, topology: topology, traceparent: traceparent, signer: signer))
    }

    /// The AMQP message for a job (also for producers written in Swift: `KeyedHMAC(key:)` of the job key).
    public static func message(
        for job: Job, topology: Topology, traceparent: TraceParent, signer: KeyedHMAC, attempt: Int = 0
    ) -> AMQPOutgoingMessage {
        let body = JobCodec.encode(job)
        return AMQPOutgoingMessage(
            exchange: topology.exchange, routingKey: job.type.rawValue, body: body,
            messageID: job.id.lowercasedText, type: job.type.rawValue,
            // In name order, as the table is kept: each is then appended after one comparison.
            headers: [
                "traceparent": .string(traceparent.description),
                JobHeader.attempt: .int(Int64(attempt)),
                ForeignJobPolicy.header: .string(IntegrationSettings.heraldAPI),
                JobHeader.schema: .int(Int64(Job.schemaVersion)),
                JobSignature.header: .string(JobSignature.sign(body, signer: signer)),
            ],
            timestamp: job.createdAt)
    }
}
