/// Why an AMQP operation failed. Callers branch on `kind`; `detail` is for logs.
public struct AMQPError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// No connection to the broker right now (it is reconnecting in the background).
        case notConnected
        /// The connection dropped while the operation was in flight; a publish may or may not have landed.
        case connectionLost
        /// The broker blocked publishers (memory or disk alarm).
        case blocked
        /// No confirm arrived within the publish timeout.
        case confirmTimeout
        /// The broker refused the message (`basic.nack`).
        case nacked
        /// No queue is bound for the routing key (`basic.return` of a mandatory publish).
        case unroutable
        /// The broker closed the channel or connection with this reply code (404, 406, 403, …).
        case serverClosed(code: Int)
        /// rabbitmq-c reported an error.
        case library
        /// The connection is shutting down.
        case shuttingDown
    }

    public var kind: Kind
    public var detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "AMQP \(kind): \(detail)" }
}
