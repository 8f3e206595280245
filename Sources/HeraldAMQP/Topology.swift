import HeraldCore

/// Herald's broker topology, derived from the exchange name so that tests (and several installations
/// on one broker) can keep theirs apart:
///
/// - exchange `<x>` (direct) routes jobs by type: `sms` → queue `<x>.sms`;
/// - work queues are quorum by default, with `x-delivery-limit` against poison messages and
///   dead-lettering to exchange `<x>.dlx`, which routes to `<x>.<type>.dead`;
/// - retry queues `<x>.<type>.retry.<delay>` (failures) and throttle queues `<x>.<type>.throttle.<delay>`
///   (rate limits) have a fixed TTL and dead-letter back to `<x>` with the original routing key, so a
///   delayed job simply reappears in its work queue.
///
/// Queue arguments cannot change once a queue exists: redeclaring with different ones fails with 406,
/// which start-up reports with the queue's name.
public struct Topology: Sendable, Equatable {
    public var exchange: String
    /// `quorum` or `classic`.
    public var queueType: String
    public var deliveryLimit: Int
    public var retryDelays: [JobType: [Duration]]
    /// Delay queues for throttled jobs (provider rate, per-destination spacing), kept apart from retries.
    public var throttleDelays: [JobType: [Duration]]

    /// Job types this version delivers.
    public static let supportedTypes: [JobType] = JobType.allCases

    public init(
        exchange: String, queueType: String, deliveryLimit: Int, retryDelays: [JobType: [Duration]],
        throttleDelays: [JobType: [Duration]] = [:]
    ) {
        self.exchange = exchange
        self.queueType = queueType
        self.deliveryLimit = deliveryLimit
        self.retryDelays = retryDelays
        self.throttleDelays = throttleDelays
    }

    public var deadLetterExchange: String { "\(exchange).dlx" }
    public func workQueue(_ type: JobType) -> String { "\(exchange).\(type.rawValue)" }
    public func deadQueue(_ type: JobType) -> String { "\(exchange).\(type.rawValue).dead" }
    public func retryQueue(_ type: JobType, delay: Duration) -> String {
        "\(exchange).\(type.rawValue).retry.\(DurationText.format(delay))"
    }

    public func throttleQueue(_ type: JobType, delay: Duration) -> String {
        "\(exchange).\(type.rawValue).throttle.\(DurationText.format(delay))"
    }

    /// Every delay queue of `type` with its TTL.
    func delayQueues(_ type: JobType) -> [(name: String, delay: Duration)] {
        (retryDelays[type] ?? []).map { (retryQueue(type, delay: $0), $0) }
            + (throttleDelays[type] ?? []).map { (throttleQueue(type, delay: $0), $0) }
    }

    /// Every queue of `type`, work queue first.
    public func queues(_ type: JobType) -> [String] {
        [workQueue(type), deadQueue(type)] + delayQueues(type).map(\.name)
    }

    /// One queue as Herald declares it: its arguments, and the binding that feeds it, if any.
    public struct QueuePlan: Sendable, Equatable {
        public var name: String
        public var arguments: [String: AMQPHeaderValue]
        public var boundTo: (exchange: String, routingKey: String)? {
            bindingExchange.map { ($0, bindingRoutingKey) }
        }
        var bindingExchange: String?
        var bindingRoutingKey: String
    }

    /// Every queue of `types` with its arguments: what `declare` creates and `definitions` exports,
    /// so the two cannot drift apart.
    public func plan(types: [JobType] = Topology.supportedTypes) -> [QueuePlan] {
        let quorum = queueType == "quorum"
        var plans: [QueuePlan] = []
        for type in types {
            var work: [String: AMQPHeaderValue] = [
                "x-queue-type": .string(queueType),
                "x-dead-letter-exchange": .string(deadLetterExchange),
            ]
            if quorum { work["x-delivery-limit"] = .int(Int64(deliveryLimit)) }
            plans.append(QueuePlan(name: workQueue(type), arguments: work, bindingExchange: exchange, bindingRoutingKey: type.rawValue))
            plans.append(
                QueuePlan(
                    name: deadQueue(type), arguments: ["x-queue-type": .string(queueType)], bindingExchange: deadLetterExchange,
                    bindingRoutingKey: type.rawValue))
            for (name, delay) in delayQueues(type) {
                var retry: [String: AMQPHeaderValue] = [
                    "x-queue-type": .string(queueType),
                    "x-message-ttl": .int(delay.milliseconds),
                    "x-dead-letter-exchange": .string(exchange),
                    "x-dead-letter-routing-key": .string(type.rawValue),
                ]
                if quorum {
                    // Dead-lettering is at-most-once unless asked otherwise: a retrying job must not
                    // vanish if its work queue refuses it for a moment.
                    retry["x-dead-letter-strategy"] = .string("at-least-once")
                    retry["x-overflow"] = .string("reject-publish")
                }
                plans.append(QueuePlan(name: name, arguments: retry, bindingExchange: nil, bindingRoutingKey: ""))
            }
        }
        return plans
    }

    /// Declares everything for `types`, idempotently.
    public func declare(on channel: AMQPChannel, types: [JobType] = Topology.supportedTypes) throws {
        try channel.declareExchange(exchange)
        try channel.declareExchange(deadLetterExchange)
        for queue in plan(types: types) {
            try channel.declareQueue(queue.name, arguments: queue.arguments)
            if let (source, routingKey) = queue.boundTo { try channel.bindQueue(queue.name, exchange: source, routingKey: routingKey) }
        }
    }

    /// Deletes everything `declare` created for `types` (tests; operators remove queues with the broker's own tools, since deleting a queue drops its jobs).
    public func delete(on channel: AMQPChannel, types: [JobType] = Topology.supportedTypes) throws {
        for type in types {
            for queue in queues(type) { try channel.deleteQueue(queue) }
        }
        try channel.deleteExchange(exchange)
        try channel.deleteExchange(deadLetterExchange)
    }
}
