import CRabbitMQ
import Foundation
import HeraldCore
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The thread-confined half of `AMQPConnection`: owns the rabbitmq-c connection and runs the loop
/// `drain inbox → read frames → poll(socket, wake-up pipe)` until told to stop.
final class ConnectionDriver {
    /// Channel 1 carries the role (confirms or the consumer); channel 2 serves `perform` RPCs.
    static let mainChannel: amqp_channel_t = 1
    static let rpcChannel: amqp_channel_t = 2

    let owner: AMQPConnection
    var logger: Logger { owner.logger }
    var state: amqp_connection_state_t?
    var generation = 0
    var rpcChannelOpen = false
    var brokenReason: String?
    var stopping = false
    /// Which node the next connect tries, and when (`ReconnectPolicy`).
    var reconnect: ReconnectPolicy
    /// Read wherever the loop needs the time, so every decision about time goes through one place.
    let now: @Sendable () -> ContinuousClock.Instant

    /// Publisher state: which publishes wait for a confirm (per connection incarnation).
    var confirms = ConfirmTracker<AMQPConnection.PendingPublish>()
    /// Publishes and acks of this turn of the loop, written with one `send` (`OutboundFrames`); only on
    /// a plain TCP connection, whose socket is `rawSocket`.
    var outbound = OutboundFrames()
    var rawSocket: Int32?
    /// The consumer's acks and nacks of this turn, written when the turn's frames are.
    var settlements = AckCoalescer()

    // Consumer state. Once cancelled, a reconnect does not consume again.
    var consuming = false
    var consumerCancelled = false
    var finishStreamAfterPump = false

    init(connection: AMQPConnection, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.owner = connection
        self.now = now
        self.reconnect = ReconnectPolicy(endpointCount: connection.options.endpoints.count, now: now())
    }

    // MARK: loop

    func run() {
        while true {
            if stopping { break }
            if state == nil, reconnect.isDue(now: now()) {
                connect()
            }
            let commands = owner.shared.withLock { shared -> [AMQPConnection.Command] in
                defer { shared.inbox = [] }
                return shared.inbox
            }
            for command in commands { execute(command) }
            flushOutbound()
            if stopping { break }
            if state != nil {
                pumpFrames()
            }
            expirePublishes()
            if let reason = brokenReason {
                teardown(reason: reason)
                continue
            }
            if finishStreamAfterPump {
                finishStreamAfterPump = false
                owner.deliveryContinuation.finish()
            }
            waitForActivity()
        }
        closeCleanly()
    }

    /// Sleeps in `poll` until the socket or the wake-up pipe is readable, a heartbeat is due, the next
    /// publish deadline passes, or (while disconnected) the next reconnect attempt is due.
    func waitForActivity() {
        if let state, amqp_frames_enqueued(state) != 0 || amqp_data_in_buffer(state) != 0 { return }
        var timeout = Duration.seconds(1)
        if state != nil {
            let heartbeat = owner.options.heartbeat
            if heartbeat > .zero { timeout = min(timeout, heartbeat / 2) }
            if let earliest = confirms.earliestDeadline {
                timeout = min(timeout, max(.zero, earliest - now()))
            }
        } else {
            timeout = min(timeout, reconnect.wait(now: now()))
        }
        var fds = [pollfd(fd: owner.wakeFDs.0, events: Int16(POLLIN), revents: 0)]
        if let state { fds.append(pollfd(fd: amqp_get_sockfd(state), events: Int16(POLLIN), revents: 0)) }
        let milliseconds = Int32(clamping: timeout.milliseconds + (timeout.milliseconds == 0 && timeout > .zero ? 1 : 0))
        _ = poll(&fds, nfds_t(fds.count), milliseconds)
        if fds[0].revents & Int16(POLLIN) != 0 {
            var drain = [UInt8](repeating: 0, count: 256)
            while read(owner.wakeFDs.0, &drain, drain.count) > 0 {}
        }
    }

    // MARK: connect and teardown

    func connect() {
        let options = owner.options
        let endpoint = options.endpoints[reconnect.endpointIndex]
        do {
            guard let state = amqp_new_connection() else { throw AMQPError(.library, "out of memory") }
            guard let socket = endpoint.tls ? try tlsSocket(state, options.tls) : amqp_tcp_socket_new(state) else {
                amqp_destroy_connection(state)
                throw AMQPError(.library, "cannot create a socket")
            }
            var connectTimeout = timeval(options.connectTimeout)
            let opened = amqp_socket_open_noblock(socket, endpoint.host, Int32(endpoint.port), &connectTimeout)
            guard opened == AMQP_STATUS_OK.rawValue else {
                amqp_destroy_connection(state)
                throw AMQPError(
                    .notConnected, "connect to \(endpoint.redacted): \(String(cString: amqp_error_string2(opened)))")
            }
            _ = amqp_set_handshake_timeout(state, &connectTimeout)
            var rpcTimeout = timeval(max(options.connectTimeout, .seconds(10)))
            _ = amqp_set_rpc_timeout(state, &rpcTimeout)
            self.state = state
            outbound.removeAll()
            settlements.reset()
            rawSocket = endpoint.tls ? nil : amqp_get_sockfd(state)
            try login(state, endpoint)
            amqp_channel_open(state, Self.mainChannel)
            try checkReply(state, "channel.open")
            generation += 1
            rpcChannelOpen = false
            brokenReason = nil
            if let onConnect = owner.onConnect {
                try withRPCChannel { channel in
                    guard let channel else { throw AMQPError(.notConnected, "setup channel") }
                    try onConnect(channel)
                }
                if let reason = brokenReason { throw AMQPError(.connectionLost, reason) }
            }
            switch options.role {
            case .publisher:
                // A new connection is a new confirm sequence: confirms of the old one died with it.
                amqp_confirm_select(state, Self.mainChannel)
                try checkReply(state, "confirm.select")
                // A new channel counts confirms from 1; nothing of the old one can be pending here.
                resume(confirms.connectionLost("reconnected"))
            case .consumer(let queue, let prefetch) where consumerCancelled == false:
                amqp_basic_qos(state, Self.mainChannel, 0, UInt16(clamping: prefetch), 0)
                try checkReply(state, "basic.qos")
                let arena = CArena()
                let ok = amqp_basic_consume(state, Self.mainChannel, arena.bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table)
                try checkReply(state, "basic.consume \(queue)")
                consumerTag = ok?.pointee.consumer_tag.string
                consuming = true
            case .consumer:
                break
            }
            reconnect.connected()
            owner.shared.withLock {
                $0.connected = true
                $0.endpoint = endpoint
                $0.blocked = false
            }
            logger.info(
                "amqp connected",
                metadata: ["amqp.endpoint": .string(endpoint.redacted), "amqp.generation": .stringConvertible(generation)])
        } catch {
            if let state {
                amqp_destroy_connection(state)
                self.state = nil
            }
            rawSocket = nil
            let message = (error as? AMQPError)?.detail ?? "\(error)"
            if reconnect.connectFailed(message, now: now()) {
                logger.warning(
                    "amqp connection failed; trying the next node",
                    metadata: ["error": .string(message), "amqp.endpoint": .string(endpoint.redacted)])
            }
        }
    }

    func tlsSocket(_ state: amqp_connection_state_t, _ tls: AMQPSettings.TLS) throws -> OpaquePointer? {
        guard let socket = amqp_ssl_socket_new(state) else { return nil }
        amqp_ssl_socket_set_verify_peer(socket, tls.verifyPeer ? 1 : 0)
        amqp_ssl_socket_set_verify_hostname(socket, tls.verifyPeer ? 1 : 0)
        // rabbitmq-c 0.11 loads no default trust store: without caFile, name the system's bundle.
        let systemRoots = "/etc/ssl/certs/ca-certificates.crt"
        if let caFile = tls.caFile ?? (FileManager.default.fileExists(atPath: systemRoots) ? systemRoots : nil) {
            let status = amqp_ssl_socket_set_cacert(socket, caFile)
            guard status == AMQP_STATUS_OK.rawValue else {
                throw AMQPError(.library, "amqp.tls.caFile \(caFile): \(String(cString: amqp_error_string2(status)))")
            }
        }
        if let certFile = tls.certFile, let keyFile = tls.keyFile {
            let status = amqp_ssl_socket_set_key(socket, certFile, keyFile)
            guard status == AMQP_STATUS_OK.rawValue else {
                throw AMQPError(.library, "amqp.tls.certFile/keyFile: \(String(cString: amqp_error_string2(status)))")
            }
        }
        return socket
    }

    func login(_ state: amqp_connection_state_t, _ endpoint: AMQPEndpoint) throws {
        let options = owner.options
        let arena = CArena()
        // Without these capabilities the broker sends no connection.blocked notices and no
        // server-side basic.cancel (rabbitmq-c 0.11 only advertises a few on its own).
        let capabilityNames = ["connection.blocked", "consumer_cancel_notify", "publisher_confirms", "basic.nack"]
        let capabilities = UnsafeMutablePointer<amqp_table_entry_t>.allocate(capacity: capabilityNames.count)
        defer { capabilities.deallocate() }
        for (index, name) in capabilityNames.enumerated() {
            var entry = amqp_table_entry_t()
            entry.key = arena.bytes(name)
            entry.value.kind = UInt8(AMQP_FIELD_KIND_BOOLEAN.rawValue)
            entry.value.value.boolean = 1
            (capabilities + index).initialize(to: entry)
        }
        let properties = UnsafeMutablePointer<amqp_table_entry_t>.allocate(capacity: 2)
        defer { properties.deallocate() }
        var capabilitiesEntry = amqp_table_entry_t()
        capabilitiesEntry.key = arena.bytes("capabilities")
        capabilitiesEntry.value.kind = UInt8(AMQP_FIELD_KIND_TABLE.rawValue)
        capabilitiesEntry.value.value.table = amqp_table_t(num_entries: Int32(capabilityNames.count), entries: capabilities)
        properties.initialize(to: capabilitiesEntry)
        var nameEntry = amqp_table_entry_t()
        nameEntry.key = arena.bytes("connection_name")
        nameEntry.value.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
        nameEntry.value.value.bytes = arena.bytes(options.name)
        (properties + 1).initialize(to: nameEntry)
        var table = amqp_table_t(num_entries: 2, entries: properties)
        let heartbeat = Int32(clamping: options.heartbeat.milliseconds / 1000)
        let reply = herald_amqp_login_plain(
            state, endpoint.virtualHost, 0, 131_072, heartbeat, &table, endpoint.user, endpoint.password)
        if let error = reply.error {
            throw AMQPError(error.kind, "login to vhost '\(endpoint.virtualHost)' as '\(endpoint.user)': \(error.detail)")
        }
    }

    func checkReply(_ state: amqp_connection_state_t, _ what: String) throws {
        if let error = amqp_get_rpc_reply(state).error {
            throw AMQPError(error.kind, "\(what): \(error.detail)")
        }
    }

    /// Drops the connection after an error and schedules a reconnect. Unconfirmed publishes fail with
    /// `.connectionLost` (they may or may not have landed); unacked deliveries go back to the queue.
    func teardown(reason: String) {
        logger.warning("amqp connection lost; reconnecting", metadata: ["reason": .string(reason)])
        if let state {
            amqp_destroy_connection(state)
            self.state = nil
        }
        rawSocket = nil
        outbound.removeAll()
        settlements.reset()
        owner.shared.withLock {
            $0.connected = false
            $0.endpoint = nil
        }
        // Publishes waiting for a confirm fail: the API answers 503 and the client retries, rather
        // than a success for a message the broker may never have taken.
        failUnconfirmed(AMQPError(.connectionLost, reason))
        brokenReason = nil
        rpcChannelOpen = false
        consuming = false
        // The node we were on just failed: start with the next one.
        reconnect.connectionLost(now: now())
    }

    func closeCleanly() {
        rawSocket = nil
        if let state {
            amqp_connection_close(state, Int32(AMQP_REPLY_SUCCESS))
            amqp_destroy_connection(state)
            self.state = nil
            logger.info("amqp connection closed")
        }
        owner.shared.withLock { $0.connected = false }
        failUnconfirmed(AMQPError(.shuttingDown, "connection closed before the broker confirmed"))
        let leftovers = owner.shared.withLock { shared -> [AMQPConnection.Command] in
            defer { shared.inbox = [] }
            shared.finished = true
            return shared.inbox
        }
        for command in leftovers { Self.refuse(command, AMQPError(.shuttingDown, "connection is closed")) }
        owner.deliveryContinuation.finish()
    }

    func markBroken(_ reason: String) {
        if brokenReason == nil { brokenReason = reason }
    }

    func failUnconfirmed(_ error: AMQPError) {
        for (publish, _) in confirms.connectionLost(error.detail) { publish.continuation.resume(throwing: error) }
    }

    /// Answers the publishers the tracker settled.
    func resume(_ settled: [(AMQPConnection.PendingPublish, ConfirmTracker<AMQPConnection.PendingPublish>.Outcome)]) {
        for (publish, outcome) in settled {
            switch outcome {
            case .confirmed: publish.continuation.resume()
            case .nacked: publish.continuation.resume(throwing: AMQPError(.nacked, "the broker refused the message"))
            case .unroutable:
                publish.continuation.resume(
                    throwing: AMQPError(
                        .unroutable, "no queue is bound to '\(publish.message.exchange)' for routing key '\(publish.message.routingKey)'"))
            case .timedOut: publish.continuation.resume(throwing: AMQPError(.confirmTimeout, "no confirm within the publish timeout"))
            case .lost(let reason): publish.continuation.resume(throwing: AMQPError(.connectionLost, reason))
            }
        }
    }

    static func refuse(_ command: AMQPConnection.Command, _ error: AMQPError) {
        switch command {
        case .publish(let publish): publish.continuation.resume(throwing: error)
        case .perform(let body): body(nil)
        case .cancelConsumer(let continuation): continuation.resume()
        case .settle, .stop: break
        }
    }

    // MARK: commands

    func execute(_ command: AMQPConnection.Command) {
        switch command {
        case .publish, .settle: break
        // Anything else may write through rabbitmq-c: the frames before it go first.
        case .stop, .perform, .cancelConsumer: flushOutbound()
        }
        switch command {
        case .stop:
            stopping = true
        case .publish(let publish):
            guard let state, brokenReason == nil else {
                publish.continuation.resume(throwing: AMQPError(.notConnected, "not connected to the broker"))
                return
            }
            send(publish, on: state)
        case .settle(let tag, let generation, let settlement):
            // Tags of an older connection are void: the broker requeued those deliveries already.
            guard state != nil, brokenReason == nil, generation == self.generation else { return }
            switch settlement {
            case .ack: settlements.ack(tag)
            case .nack(let requeue): settlements.nack(tag, requeue: requeue)
            }
        case .perform(let body):
            guard state != nil, brokenReason == nil else {
                body(nil)
                return
            }
            try? withRPCChannel { channel in body(channel) }
        case .cancelConsumer(let continuation):
            consumerCancelled = true
            if let state, consuming, brokenReason == nil {
                if let tag = consumerTag {
                    let arena = CArena()
                    amqp_basic_cancel(state, Self.mainChannel, arena.bytes(tag))
                    if let error = amqp_get_rpc_reply(state).error { markBroken("basic.cancel: \(error.detail)") }
                }
                consuming = false
            }
            finishStreamAfterPump = true
            continuation.resume()
        }
    }

    var consumerTag: String?

    func withRPCChannel(_ body: (AMQPChannel?) throws -> Void) throws {
        guard let state else { return try body(nil) }
        if rpcChannelOpen == false {
            amqp_channel_open(state, Self.rpcChannel)
            if let error = amqp_get_rpc_reply(state).error {
                markBroken("channel.open: \(error.detail)")
                return try body(nil)
            }
            rpcChannelOpen = true
        }
        try body(AMQPChannel(driver: self, connection: state, id: Self.rpcChannel))
    }

    func send(_ publish: AMQPConnection.PendingPublish, on state: amqp_connection_state_t) {
        let message = publish.message
        if rawSocket != nil {
            do {
                try outbound.publish(message, channel: Self.mainChannel, frameMax: Int(amqp_get_frame_max(state)))
            } catch {
                publish.continuation.resume(throwing: error)
                return
            }
            confirms.published(messageID: message.messageID, deadline: publish.deadline, waiter: publish)
            return
        }
        let arena = CArena()
        var properties = amqp_basic_properties_t()
        var flags: Int32 = 0
        if message.persistent {
            flags |= AMQP_BASIC_DELIVERY_MODE_FLAG
            properties.delivery_mode = UInt8(AMQP_DELIVERY_PERSISTENT.rawValue)
        }
        if let contentType = message.contentType {
            flags |= AMQP_BASIC_CONTENT_TYPE_FLAG
            properties.content_type = arena.bytes(contentType)
        }
        if let messageID = message.messageID {
            flags |= AMQP_BASIC_MESSAGE_ID_FLAG
            properties.message_id = arena.bytes(messageID)
        }
        if let type = message.type {
            flags |= AMQP_BASIC_TYPE_FLAG
            properties.type = arena.bytes(type)
        }
        if let timestamp = message.timestamp {
            flags |= AMQP_BASIC_TIMESTAMP_FLAG
            properties.timestamp = UInt64(max(0, timestamp.timeIntervalSince1970))
        }
        if message.headers.isEmpty == false {
            flags |= AMQP_BASIC_HEADERS_FLAG
            properties.headers = arena.table(message.headers)
        }
        properties._flags = amqp_flags_t(flags)
        let status = amqp_basic_publish(
            state, Self.mainChannel, arena.bytes(message.exchange), arena.bytes(message.routingKey),
            message.mandatory ? 1 : 0, 0, &properties, arena.bytes(message.body))
        guard status == AMQP_STATUS_OK.rawValue else {
            let reason = "basic.publish: \(String(cString: amqp_error_string2(status)))"
            publish.continuation.resume(throwing: AMQPError(.connectionLost, reason))
            markBroken(reason)
            return
        }
        confirms.published(messageID: message.messageID, deadline: publish.deadline, waiter: publish)
    }

    /// Writes the buffered frames. The socket is rabbitmq-c's (non-blocking): a full send buffer is
    /// waited out in `poll`, up to the publish timeout without progress, after which the connection is
    /// given up as rabbitmq-c would give up a frame it cannot write.
    func flushOutbound() {
        if settlements.hasSettlements { writeSettlements() }
        guard outbound.isEmpty == false else { return }
        defer { outbound.removeAll() }
        guard let socket = rawSocket, state != nil, brokenReason == nil else { return }
        var lastProgress = now()
        outbound.bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = Glibc.send(socket, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent > 0 {
                    offset += sent
                    lastProgress = now()
                    continue
                }
                let failure = errno
                if sent < 0, failure == EINTR { continue }
                guard sent < 0, failure == EAGAIN || failure == EWOULDBLOCK else {
                    markBroken("send: \(String(cString: strerror(failure)))")
                    return
                }
                if now() - lastProgress > owner.options.publishTimeout {
                    markBroken("send: the broker took nothing for \(owner.options.publishTimeout)")
                    return
                }
                var fd = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                _ = poll(&fd, 1, 100)
            }
        }
    }

    /// Turns this turn's acks and nacks into frames: into the turn's buffer on a plain TCP connection,
    /// through rabbitmq-c (one write each) on a TLS one.
    func writeSettlements() {
        let settled = settlements.pending
        let frames = settlements.frames()
        owner.shared.withLock {
            $0.settlements += settled
            $0.settlementFrames += frames.count
        }
        guard let state, brokenReason == nil else { return }
        for frame in frames {
            if rawSocket != nil {
                switch frame {
                case .ack(let tag, let multiple): outbound.ack(tag: tag, multiple: multiple, channel: Self.mainChannel)
                case .nack(let tag, let requeue): outbound.nack(tag: tag, requeue: requeue, channel: Self.mainChannel)
                }
                continue
            }
            let status: Int32
            switch frame {
            case .ack(let tag, let multiple): status = amqp_basic_ack(state, Self.mainChannel, tag, multiple ? 1 : 0)
            case .nack(let tag, let requeue): status = amqp_basic_nack(state, Self.mainChannel, tag, 0, requeue ? 1 : 0)
            }
            if status != AMQP_STATUS_OK.rawValue {
                markBroken("ack: \(String(cString: amqp_error_string2(status)))")
                return
            }
        }
    }

    func expirePublishes() {
        guard confirms.count > 0 else { return }
        resume(confirms.expired(now: now()))
    }

    // MARK: frames

    /// Reads every frame available without blocking (this is also where rabbitmq-c sends heartbeats
    /// and notices a silent broker), then releases the library's buffers.
    func pumpFrames() {
        guard let state else { return }
        while brokenReason == nil {
            var frame = amqp_frame_t()
            var zero = timeval(tv_sec: 0, tv_usec: 0)
            let status = amqp_simple_wait_frame_noblock(state, &frame, &zero)
            if status == AMQP_STATUS_TIMEOUT.rawValue { break }
            guard status == AMQP_STATUS_OK.rawValue else {
                markBroken(String(cString: amqp_error_string2(status)))
                break
            }
            guard frame.frame_type == UInt8(AMQP_FRAME_METHOD) else { continue }
            handle(method: frame.payload.method, channel: frame.channel, state: state)
        }
        if brokenReason == nil { amqp_maybe_release_buffers(state) }
    }

    func handle(method: amqp_method_t, channel: amqp_channel_t, state: amqp_connection_state_t) {
        switch method.id {
        case AMQP_BASIC_ACK_METHOD:
            let ack = method.decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            resume(confirms.acked(ack.delivery_tag, multiple: ack.multiple != 0))
        case AMQP_BASIC_NACK_METHOD:
            let nack = method.decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            resume(confirms.nacked(nack.delivery_tag, multiple: nack.multiple != 0))
        case AMQP_BASIC_RETURN_METHOD:
            var message = amqp_message_t()
            let reply = amqp_read_message(state, channel, &message, 0)
            if let error = reply.error {
                markBroken("reading a returned message: \(error.detail)")
                return
            }
            if message.properties._flags & amqp_flags_t(AMQP_BASIC_MESSAGE_ID_FLAG) != 0 {
                confirms.returned(messageID: message.properties.message_id.string)
            }
            amqp_destroy_message(&message)
        case AMQP_BASIC_DELIVER_METHOD:
            let deliver = method.decoded.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee
            guard
                let delivery = readDelivery(
                    on: channel, tag: deliver.delivery_tag, redelivered: deliver.redelivered != 0,
                    exchange: deliver.exchange.string, routingKey: deliver.routing_key.string)
            else { return }
            if channel == Self.mainChannel { settlements.delivered(delivery.deliveryTag) }
            owner.deliveryContinuation.yield(delivery)
        case AMQP_BASIC_CANCEL_METHOD:
            // The broker cancelled our consumer (queue deleted, or failover): reconnect and consume again.
            markBroken("the broker cancelled the consumer")
        case AMQP_CONNECTION_BLOCKED_METHOD:
            let blocked = method.decoded.assumingMemoryBound(to: amqp_connection_blocked_t.self).pointee
            logger.warning("amqp publishing blocked by the broker", metadata: ["reason": .string(blocked.reason.string)])
            owner.shared.withLock { $0.blocked = true }
        case AMQP_CONNECTION_UNBLOCKED_METHOD:
            logger.notice("amqp publishing unblocked")
            owner.shared.withLock { $0.blocked = false }
        case AMQP_CHANNEL_CLOSE_METHOD:
            let close = method.decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            var closeOK = amqp_channel_close_ok_t(dummy: 0)
            _ = amqp_send_method(state, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &closeOK)
            let text = "channel \(channel) closed by the broker: \(close.reply_code) \(close.reply_text.string)"
            if channel == Self.rpcChannel {
                rpcChannelOpen = false
                logger.warning("amqp rpc channel closed", metadata: ["reason": .string(text)])
            } else {
                markBroken(text)
            }
        case AMQP_CONNECTION_CLOSE_METHOD:
            let close = method.decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            var closeOK = amqp_connection_close_ok_t(dummy: 0)
            _ = amqp_send_method(state, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &closeOK)
            markBroken("connection closed by the broker: \(close.reply_code) \(close.reply_text.string)")
        default:
            break
        }
    }

    /// Reads the content frames following a `basic.deliver` or `basic.get-ok` and copies them out;
    /// nil (with the connection marked broken) when the read failed.
    func readDelivery(
        on channel: amqp_channel_t, tag: UInt64, redelivered: Bool, exchange: String, routingKey: String
    ) -> AMQPDelivery? {
        guard let state else { return nil }
        var message = amqp_message_t()
        if let error = amqp_read_message(state, channel, &message, 0).error {
            markBroken("reading a message: \(error.detail)")
            return nil
        }
        defer { amqp_destroy_message(&message) }
        return AMQPDelivery(
            message: message, deliveryTag: tag, generation: generation, redelivered: redelivered, exchange: exchange,
            routingKey: routingKey)
    }
}

extension timeval {
    init(_ duration: Duration) {
        let parts = duration.components
        self.init(tv_sec: Int(parts.seconds), tv_usec: Int(parts.attoseconds / 1_000_000_000_000))
    }
}
