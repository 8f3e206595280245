import CRabbitMQ
import Foundation

/// Synchronous RPCs on the connection's spare channel: declarations, deletes, `basic.get`.
///
/// Only valid inside `AMQPConnection.perform { channel in … }`, which runs the closure on the
/// connection's own thread (rabbitmq-c connections must never be shared between threads).
public struct AMQPChannel {
    let driver: ConnectionDriver
    let connection: amqp_connection_state_t
    let id: amqp_channel_t

    /// Checks the reply of the last RPC, tidying up the channel or connection the broker closed.
    private func check(_ what: String) throws {
        let reply = amqp_get_rpc_reply(connection)
        guard let error = reply.error else { return }
        if reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION, reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD {
            var closeOK = amqp_channel_close_ok_t(dummy: 0)
            _ = amqp_send_method(connection, id, AMQP_CHANNEL_CLOSE_OK_METHOD, &closeOK)
            driver.rpcChannelOpen = false
        } else {
            driver.markBroken("\(what): \(error.detail)")
        }
        throw AMQPError(error.kind, "\(what): \(error.detail)")
    }

    /// Declares (or checks) a durable exchange.
    public func declareExchange(_ name: String, type: String = "direct") throws {
        let arena = CArena()
        _ = amqp_exchange_declare(connection, id, arena.bytes(name), arena.bytes(type), 0, 1, 0, 0, amqp_empty_table)
        try check("exchange.declare \(name)")
    }

    /// Declares a durable queue with `arguments`; fails with 406 if it exists with different ones.
    @discardableResult
    public func declareQueue(_ name: String, arguments: [String: AMQPHeaderValue]) throws -> (messages: Int, consumers: Int) {
        let arena = CArena()
        let ok = amqp_queue_declare(connection, id, arena.bytes(name), 0, 1, 0, 0, arena.table(AMQPHeaders(arguments)))
        try check("queue.declare \(name)")
        return (Int(ok?.pointee.message_count ?? 0), Int(ok?.pointee.consumer_count ?? 0))
    }

    /// Message and consumer counts of an existing queue (404 if it does not exist).
    public func inspectQueue(_ name: String) throws -> (messages: Int, consumers: Int) {
        let arena = CArena()
        let ok = amqp_queue_declare(connection, id, arena.bytes(name), 1, 0, 0, 0, amqp_empty_table)
        try check("queue.declare passive \(name)")
        return (Int(ok?.pointee.message_count ?? 0), Int(ok?.pointee.consumer_count ?? 0))
    }

    public func bindQueue(_ queue: String, exchange: String, routingKey: String) throws {
        let arena = CArena()
        _ = amqp_queue_bind(connection, id, arena.bytes(queue), arena.bytes(exchange), arena.bytes(routingKey), amqp_empty_table)
        try check("queue.bind \(queue)")
    }

    public func deleteQueue(_ name: String) throws {
        let arena = CArena()
        _ = amqp_queue_delete(connection, id, arena.bytes(name), 0, 0)
        try check("queue.delete \(name)")
    }

    public func deleteExchange(_ name: String) throws {
        let arena = CArena()
        _ = amqp_exchange_delete(connection, id, arena.bytes(name), 0)
        try check("exchange.delete \(name)")
    }

    @discardableResult
    public func purgeQueue(_ name: String) throws -> Int {
        let arena = CArena()
        let ok = amqp_queue_purge(connection, id, arena.bytes(name))
        try check("queue.purge \(name)")
        return Int(ok?.pointee.message_count ?? 0)
    }

    /// Takes one message off `queue` (`basic.get`), removing it when `acknowledge` is true,
    /// or leaving it for redelivery once the channel closes otherwise.
    public func get(_ queue: String, acknowledge: Bool = true) throws -> AMQPDelivery? {
        let arena = CArena()
        let reply = amqp_basic_get(connection, id, arena.bytes(queue), acknowledge ? 1 : 0)
        if reply.error != nil { try check("basic.get \(queue)") }
        guard reply.reply.id == AMQP_BASIC_GET_OK_METHOD, let decoded = reply.reply.decoded else { return nil }
        let getOK = decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        guard
            let delivery = driver.readDelivery(
                on: id, tag: getOK.delivery_tag, redelivered: getOK.redelivered != 0, exchange: getOK.exchange.string,
                routingKey: getOK.routing_key.string)
        else { throw AMQPError(.connectionLost, "basic.get \(queue): the message body could not be read") }
        return delivery
    }
}

extension AMQPDelivery {
    init(
        message: amqp_message_t, deliveryTag: UInt64, generation: Int, redelivered: Bool, exchange: String,
        routingKey: String
    ) {
        let properties = message.properties
        func flag(_ mask: Int32) -> Bool { properties._flags & amqp_flags_t(mask) != 0 }
        self.init(
            deliveryTag: deliveryTag, generation: generation, redelivered: redelivered, exchange: exchange,
            routingKey: routingKey,
            messageID: flag(AMQP_BASIC_MESSAGE_ID_FLAG) ? properties.message_id.string : nil,
            type: flag(AMQP_BASIC_TYPE_FLAG) ? properties.type.string : nil,
            contentType: flag(AMQP_BASIC_CONTENT_TYPE_FLAG) ? properties.content_type.string : nil,
            headers: flag(AMQP_BASIC_HEADERS_FLAG) ? properties.headers.headers : [:],
            body: message.body.data)
    }
}

extension AMQPChannel {
    /// Acknowledges a message taken with `get(_:acknowledge: false)` on this channel.
    public func ack(_ delivery: AMQPDelivery) throws {
        let status = amqp_basic_ack(connection, id, delivery.deliveryTag, 0)
        guard status == AMQP_STATUS_OK.rawValue else {
            driver.markBroken("basic.ack: \(String(cString: amqp_error_string2(status)))")
            throw AMQPError(.connectionLost, "basic.ack failed")
        }
    }

    /// Closes and reopens this channel, returning every unacknowledged `get` to its queue.
    public func closeAndReopen() throws {
        amqp_channel_close(connection, id, Int32(AMQP_REPLY_SUCCESS))
        driver.rpcChannelOpen = false
        if let error = amqp_get_rpc_reply(connection).error {
            driver.markBroken("channel.close: \(error.detail)")
            throw error
        }
    }
}
