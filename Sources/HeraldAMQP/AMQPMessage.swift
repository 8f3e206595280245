import Foundation

/// A header value this client writes and reads (the subset Herald's jobs and dead letters use).
public enum AMQPHeaderValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case bool(Bool)
    /// A value of a kind Herald does not interpret (such as `x-death`'s array of tables).
    case unsupported
}

/// A message to publish.
public struct AMQPOutgoingMessage: Sendable {
    public var exchange: String
    public var routingKey: String
    public var body: Data
    public var messageID: String?
    public var type: String?
    public var contentType: String?
    public var headers: AMQPHeaders
    /// Delivery mode 2 (survives a broker restart in a durable queue).
    public var persistent: Bool
    /// Ask the broker to return the message if no queue is bound (a confirm then fails with `.unroutable`).
    public var mandatory: Bool
    public var timestamp: Date?

    public init(
        exchange: String, routingKey: String, body: Data, messageID: String? = nil, type: String? = nil,
        contentType: String? = "application/json", headers: AMQPHeaders = [:], persistent: Bool = true,
        mandatory: Bool = true, timestamp: Date? = nil
    ) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.body = body
        self.messageID = messageID
        self.type = type
        self.contentType = contentType
        self.headers = headers
        self.persistent = persistent
        self.mandatory = mandatory
        self.timestamp = timestamp
    }
}

/// A message received from a queue. Ack, nack or reject it through the connection it came from.
public struct AMQPDelivery: Sendable {
    /// The broker's tag for this delivery on its channel.
    public var deliveryTag: UInt64
    /// Which connection incarnation delivered it; acks for an older incarnation are dropped, because
    /// the broker already requeued those deliveries when the connection died.
    public var generation: Int
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    public var messageID: String?
    public var type: String?
    public var contentType: String?
    public var headers: AMQPHeaders
    public var body: Data

    public init(
        deliveryTag: UInt64, generation: Int, redelivered: Bool, exchange: String, routingKey: String,
        messageID: String?, type: String?, contentType: String?, headers: AMQPHeaders, body: Data
    ) {
        self.deliveryTag = deliveryTag
        self.generation = generation
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
        self.messageID = messageID
        self.type = type
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }
}
