import Foundation
import HeraldCore
import Logging
import ServiceLifecycle

/// A worker's queue on RabbitMQ: two connections, a consumer of `<exchange>.<type>` and a
/// confirm-mode publisher for delayed copies and dead letters (separate, because a publishing
/// connection the broker blocks must not block acks). Both declare `type`'s topology whenever they
/// connect.
public final class AMQPJobQueue: JobQueue {
    public let type: JobType
    public let topology: Topology
    public let consumer: AMQPConnection
    /// Also what the worker asks about its queues' depth (`QueueGauges`).
    public let publisher: AMQPConnection

    /// `instance` (the worker's ledger owner, `host:pid:random`) goes into the consumer's connection
    /// name, so the broker's list of consumers tells instances apart (the status page shows it).
    public init(settings: AMQPSettings, topology: Topology, type: JobType, prefetch: Int, instance: String? = nil, logger: Logger) {
        self.type = type
        self.topology = topology
        let declare: @Sendable (AMQPChannel) throws -> Void = { channel in
            do {
                try topology.declare(on: channel, types: [type])
            } catch {
                logger.error("cannot declare the broker topology", metadata: ["error": .string("\(error)")])
                throw error
            }
        }
        consumer = AMQPConnection(
            options: .init(
                settings, role: .consumer(queue: topology.workQueue(type), prefetch: prefetch),
                name: "herald-\(type.rawValue)-worker consumer" + (instance.map { " \($0)" } ?? "")),
            logger: logger, onConnect: declare)
        publisher = AMQPConnection(
            options: .init(settings, role: .publisher, name: "herald-\(type.rawValue)-worker publisher"), logger: logger, onConnect: declare)
    }

    public var name: String { topology.workQueue(type) }
    public var deliveries: AsyncStream<AMQPDelivery> { consumer.deliveries }
    public var isReady: Bool { consumer.isConnected }

    public func start() async {
        publisher.start()
        while publisher.isConnected == false, Task.isCancelled == false, Task.isShuttingDownGracefully == false {
            _ = await publisher.waitUntilConnected(timeout: .milliseconds(200))
        }
        consumer.start()
    }

    public func stopConsuming() async { await consumer.cancelConsumer() }

    public func shutdown() async {
        await consumer.shutdown()
        await publisher.shutdown()
    }

    public func ack(_ delivery: AMQPDelivery) { consumer.ack(delivery) }
    public func requeue(_ delivery: AMQPDelivery) { consumer.nack(delivery, requeue: true) }
    public func reject(_ delivery: AMQPDelivery) { consumer.nack(delivery, requeue: false) }

    public func publishDelayed(_ delivery: AMQPDelivery, _ wait: DelayedCopy.Wait) async throws {
        try await publisher.publish(DelayedCopy.delayed(delivery, wait, type: type, topology: topology))
    }

    public func deadLetter(_ delivery: AMQPDelivery, reason: String, attempt: Int, failedAt: Date) async throws {
        try await publisher.publish(
            DelayedCopy.deadLetter(delivery, reason: reason, attempt: attempt, failedAt: failedAt, type: type, topology: topology))
    }
}
