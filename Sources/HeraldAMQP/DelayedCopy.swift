import Foundation
import HeraldCore

/// The copies a worker publishes of a delivery, as they go on the wire: same body and message id,
/// the headers a job keeps (`Job.carriedHeaders`), and the bookkeeping of why it was copied. Pure, so
/// the broker's queue and the in-memory one make the same copies.
public enum DelayedCopy {
    /// Why a copy waits, and for how long.
    public enum Wait: Sendable, Equatable {
        /// A failed attempt: the copy carries `attempt` and waits in the retry queue for `delay`.
        case retry(delay: Duration, attempt: Int)
        /// A throttle: the copy waits in the throttle queue for `delay`, counted in
        /// `x-herald-throttled`, with the spacing slot it reserved (`x-herald-not-before`, µs since 1970).
        case throttle(delay: Duration, notBefore: Int64?)
    }

    /// The headers a job keeps when republished (not the broker's own `x-death` bookkeeping).
    public static func carriedHeaders(_ headers: AMQPHeaders) -> AMQPHeaders {
        headers.filter { Job.carriedHeaders.contains($0.key) }
    }

    /// The copy of `delivery` that waits as `wait` says in `type`'s delay queue of `topology`.
    public static func delayed(_ delivery: AMQPDelivery, _ wait: Wait, type: JobType, topology: Topology) -> AMQPOutgoingMessage {
        var headers = carriedHeaders(delivery.headers)
        let queue: String
        switch wait {
        case .retry(let delay, let attempt):
            headers[JobHeader.attempt] = .int(Int64(attempt))
            queue = topology.retryQueue(type, delay: delay)
        case .throttle(let delay, let notBefore):
            if let notBefore { headers[JobHeader.notBefore] = .int(notBefore) }
            var throttled: Int64 = 1
            if case .int(let previous) = delivery.headers[JobHeader.throttled] { throttled = previous + 1 }
            headers[JobHeader.throttled] = .int(throttled)
            if case .int(let attempt) = delivery.headers[JobHeader.attempt] { headers[JobHeader.attempt] = .int(attempt) }
            queue = topology.throttleQueue(type, delay: delay)
        }
        return AMQPOutgoingMessage(
            exchange: "", routingKey: queue, body: delivery.body, messageID: delivery.messageID, type: delivery.type,
            contentType: delivery.contentType, headers: headers)
    }

    /// The copy of `delivery` for `type`'s dead-letter queue, with why and when.
    public static func deadLetter(
        _ delivery: AMQPDelivery, reason: String, attempt: Int, failedAt: Date, type: JobType, topology: Topology
    ) -> AMQPOutgoingMessage {
        var headers = carriedHeaders(delivery.headers)
        headers[JobHeader.reason] = .string(reason)
        headers[JobHeader.attempt] = .int(Int64(attempt))
        headers[JobHeader.failedAt] = .string(Timestamp.format(failedAt))
        return AMQPOutgoingMessage(
            exchange: topology.deadLetterExchange, routingKey: type.rawValue, body: delivery.body, messageID: delivery.messageID,
            type: delivery.type, contentType: delivery.contentType, headers: headers)
    }
}
