import Foundation
import HeraldCore

/// What a worker needs of its broker, and nothing more: receive deliveries from its work queue,
/// settle each one (ack, requeue, reject), publish a job again to wait in a delay queue, and publish
/// it to its dead-letter queue with a reason. `AMQPJobQueue` is RabbitMQ; HeraldTesting's
/// `MemoryJobQueue` keeps everything in memory so the worker runs in a test without a broker.
///
/// Publishing is confirmed: `publishDelayed` and `deadLetter` return once the queue holds the copy,
/// and throw when it cannot; the worker acks the original only after that, so a job is never lost
/// between the two.
public protocol JobQueue: AnyObject, Sendable {
    /// The work queue's name, for logs.
    var name: String { get }
    /// Deliveries in the order the queue hands them out; finishes once consuming has stopped.
    var deliveries: AsyncStream<AMQPDelivery> { get }
    /// True while deliveries can arrive (the consumer is connected).
    var isReady: Bool { get }
    /// Connects; consuming begins only once copies can be published (a job taken before that could
    /// only be rejected, losing Herald's reason). Returns when consuming has begun or the task is
    /// cancelled or shutting down.
    func start() async
    /// Stops handing out new deliveries; those already sent still arrive, then `deliveries` ends.
    func stopConsuming() async
    /// Closes after what is queued (settlements) has gone out.
    func shutdown() async

    /// Done with: the queue forgets the delivery.
    func ack(_ delivery: AMQPDelivery)
    /// Back to the work queue, to be delivered again.
    func requeue(_ delivery: AMQPDelivery)
    /// Refused without a copy: the broker dead-letters it itself (reason `rejected`).
    func reject(_ delivery: AMQPDelivery)

    /// Publishes a copy of `delivery` to the delay queue `wait` names; the copy comes back to the work
    /// queue once the wait is over. Does not settle `delivery`.
    func publishDelayed(_ delivery: AMQPDelivery, _ wait: DelayedCopy.Wait) async throws
    /// Publishes a copy of `delivery` to the dead-letter queue, `reason` and `attempt` in its headers.
    /// Does not settle `delivery`.
    func deadLetter(_ delivery: AMQPDelivery, reason: String, attempt: Int, failedAt: Date) async throws
}
