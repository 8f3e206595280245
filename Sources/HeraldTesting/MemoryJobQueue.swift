import Foundation
import HeraldAMQP
import HeraldCore
import Synchronization

/// A worker's queue in memory, for running `WorkerService` in a test without a broker (in the manner
/// of swift-jobs' `MemoryJobQueue`): the test pushes messages, the worker takes them from `deliveries`,
/// and every settlement and copy is recorded for the test to read.
///
/// Delayed copies do not come back on their own: `releaseDelayed()` returns them to the work queue as
/// the broker's TTL would, so a test decides when a retry runs. `crash()` hands every unsettled
/// delivery out again marked redelivered, as the broker does when a worker's connection dies.
public final class MemoryJobQueue: JobQueue {
    /// What became of one delivery, or what was published for it.
    public enum Event: Sendable, Equatable {
        case acked(messageID: String?)
        case requeued(messageID: String?)
        case rejected(messageID: String?)
        case delayed(messageID: String?, DelayedCopy.Wait)
        case deadLettered(messageID: String?, reason: String, attempt: Int)
        /// A settlement of a delivery already settled (or handed out again by `crash()`): a worker bug.
        case settledTwice(messageID: String?)
    }

    public let type: JobType
    public let topology: Topology
    public let deliveries: AsyncStream<AMQPDelivery>
    private let continuation: AsyncStream<AMQPDelivery>.Continuation

    private struct State {
        var nextTag: UInt64 = 1
        var unsettled: [UInt64: AMQPDelivery] = [:]
        var events: [Event] = []
        var delayed: [AMQPOutgoingMessage] = []
        var deadLetters: [AMQPOutgoingMessage] = []
        var failPublishes = false
        var consuming = true
        var started = false
        /// Messages put on the queue while nothing consumes (after `stopConsuming`).
        var waiting: [AMQPOutgoingMessage] = []
    }
    private let state = Mutex(State())

    public init(type: JobType = .sms, topology: Topology = Topology(exchange: "memory", queueType: "classic", deliveryLimit: 10, retryDelays: [:])) {
        self.type = type
        self.topology = topology
        (deliveries, continuation) = AsyncStream.makeStream(of: AMQPDelivery.self)
    }

    // MARK: what the test does

    /// Puts `message` on the work queue (as the exchange would route it).
    public func push(_ message: AMQPOutgoingMessage, redelivered: Bool = false) {
        let delivery = state.withLock { state -> AMQPDelivery? in
            guard state.consuming else {
                state.waiting.append(message)
                return nil
            }
            let tag = state.nextTag
            state.nextTag += 1
            let delivery = AMQPDelivery(
                deliveryTag: tag, generation: 0, redelivered: redelivered, exchange: message.exchange, routingKey: message.routingKey,
                messageID: message.messageID, type: message.type, contentType: message.contentType, headers: message.headers, body: message.body)
            state.unsettled[tag] = delivery
            return delivery
        }
        if let delivery { continuation.yield(delivery) }
    }

    /// Puts `job` on the work queue as herald-api publishes it, signed with `signer`.
    public func push(_ job: Job, signer: KeyedHMAC, attempt: Int = 0) {
        push(AMQPJobPublisher.message(for: job, topology: topology, traceparent: TraceParent.random(), signer: signer, attempt: attempt))
    }

    /// Returns every delayed copy to the work queue; how many.
    @discardableResult
    public func releaseDelayed() -> Int {
        let copies = state.withLock { state in
            defer { state.delayed = [] }
            return state.delayed
        }
        for copy in copies { push(copy) }
        return copies.count
    }

    /// Hands every unsettled delivery out again, redelivered.
    public func crash() {
        let pending = state.withLock { state in
            defer { state.unsettled = [:] }
            return state.unsettled.values.sorted { $0.deliveryTag < $1.deliveryTag }
        }
        for delivery in pending {
            push(
                AMQPOutgoingMessage(
                    exchange: delivery.exchange, routingKey: delivery.routingKey, body: delivery.body, messageID: delivery.messageID,
                    type: delivery.type, contentType: delivery.contentType, headers: delivery.headers),
                redelivered: true)
        }
    }

    /// While true, publishing a copy fails as an unconfirmed publish does.
    public func failPublishes(_ fail: Bool) { state.withLock { $0.failPublishes = fail } }

    /// Everything that happened, in order.
    public var events: [Event] { state.withLock { $0.events } }
    /// Copies waiting in delay queues.
    public var delayed: [AMQPOutgoingMessage] { state.withLock { $0.delayed } }
    /// Copies in the dead-letter queue.
    public var deadLetters: [AMQPOutgoingMessage] { state.withLock { $0.deadLetters } }
    /// Messages on the work queue that no consumer took (handed back after consuming stopped).
    public var waiting: [AMQPOutgoingMessage] { state.withLock { $0.waiting } }
    /// Deliveries handed out and not settled.
    public var unsettledCount: Int { state.withLock { $0.unsettled.count } }

    /// Waits until `condition` holds of the events (checked every few milliseconds, up to `timeout`).
    public func waitFor(timeout: Duration = .seconds(10), _ condition: ([Event]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(events) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition(events)
    }

    // MARK: JobQueue

    public var name: String { topology.workQueue(type) }
    public var isReady: Bool { state.withLock { $0.started && $0.consuming } }

    public func start() async { state.withLock { $0.started = true } }

    public func stopConsuming() async {
        state.withLock { $0.consuming = false }
        continuation.finish()
    }

    public func shutdown() async { continuation.finish() }

    public func ack(_ delivery: AMQPDelivery) { settle(delivery, .acked(messageID: delivery.messageID)) }
    public func requeue(_ delivery: AMQPDelivery) { settle(delivery, .requeued(messageID: delivery.messageID)) }
    public func reject(_ delivery: AMQPDelivery) { settle(delivery, .rejected(messageID: delivery.messageID)) }

    public func publishDelayed(_ delivery: AMQPDelivery, _ wait: DelayedCopy.Wait) async throws {
        let copy = DelayedCopy.delayed(delivery, wait, type: type, topology: topology)
        try state.withLock { state in
            guard state.failPublishes == false else { throw AMQPError(.notConnected, "publishing fails (MemoryJobQueue.failPublishes)") }
            state.delayed.append(copy)
            state.events.append(.delayed(messageID: delivery.messageID, wait))
        }
    }

    public func deadLetter(_ delivery: AMQPDelivery, reason: String, attempt: Int, failedAt: Date) async throws {
        let copy = DelayedCopy.deadLetter(delivery, reason: reason, attempt: attempt, failedAt: failedAt, type: type, topology: topology)
        try state.withLock { state in
            guard state.failPublishes == false else { throw AMQPError(.notConnected, "publishing fails (MemoryJobQueue.failPublishes)") }
            state.deadLetters.append(copy)
            state.events.append(.deadLettered(messageID: delivery.messageID, reason: reason, attempt: attempt))
        }
    }

    private func settle(_ delivery: AMQPDelivery, _ event: Event) {
        let requeued = state.withLock { state -> Bool in
            // A delivery settled twice, or one from before a crash, is a worker bug the test should see.
            guard state.unsettled.removeValue(forKey: delivery.deliveryTag) != nil else {
                state.events.append(.settledTwice(messageID: delivery.messageID))
                return false
            }
            state.events.append(event)
            if case .requeued = event { return true }
            return false
        }
        if requeued {
            push(
                AMQPOutgoingMessage(
                    exchange: delivery.exchange, routingKey: delivery.routingKey, body: delivery.body, messageID: delivery.messageID,
                    type: delivery.type, contentType: delivery.contentType, headers: delivery.headers),
                redelivered: true)
        }
    }
}
