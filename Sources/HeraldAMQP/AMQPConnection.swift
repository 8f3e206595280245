import CRabbitMQ
import Foundation
import HeraldCore
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One AMQP connection on its own thread, publishing with pipelined confirms or consuming with
/// prefetch and manual acks, and reconnecting with backoff when the broker goes away.
///
/// rabbitmq-c calls block and a connection must stay on one thread, so every C call happens on a
/// dedicated thread that multiplexes the socket and a wake-up pipe with `poll`; async callers talk
/// to it through a locked inbox. Because that thread polls the socket at least every heartbeat/2,
/// heartbeats are serviced however long jobs take. Publishers and consumers use separate connections,
/// as RabbitMQ's flow control blocks publishing connections (and with them their acks).
public final class AMQPConnection: Service, Sendable {
    /// What the connection is for.
    public enum Role: Sendable {
        /// Confirm-mode channel; `publish` resolves on the broker's ack.
        case publisher
        /// Consumes `queue` with `prefetch` unacknowledged deliveries in flight.
        case consumer(queue: String, prefetch: Int)
    }

    /// Connection settings.
    public struct Options: Sendable {
        /// The broker's nodes, tried in order: a failed connect moves on to the next at once; a full
        /// round of failures waits with backoff (100 ms doubling to 5 s) before the next round.
        public var endpoints: [AMQPEndpoint]
        /// For `amqps://` endpoints.
        public var tls: AMQPSettings.TLS
        public var role: Role
        /// Shown in `rabbitmqctl list_connections client_properties`.
        public var name: String
        public var heartbeat: Duration
        public var connectTimeout: Duration
        /// How long a publish may wait for its confirm.
        public var publishTimeout: Duration

        public init(
            endpoints: [AMQPEndpoint], tls: AMQPSettings.TLS = .init(), role: Role, name: String,
            heartbeat: Duration = .seconds(30), connectTimeout: Duration = .seconds(5), publishTimeout: Duration = .seconds(5)
        ) {
            precondition(endpoints.isEmpty == false, "an AMQP connection needs at least one endpoint")
            self.endpoints = endpoints
            self.tls = tls
            self.role = role
            self.name = name
            self.heartbeat = heartbeat
            self.connectTimeout = connectTimeout
            self.publishTimeout = publishTimeout
        }
    }

    /// Which endpoint the connection uses now (nil while disconnected), for logs and tests.
    public var connectedEndpoint: AMQPEndpoint? { shared.withLock { $0.connected ? $0.endpoint : nil } }

    enum Command: Sendable {
        case publish(PendingPublish)
        case settle(tag: UInt64, generation: Int, Settlement)
        case perform(@Sendable (AMQPChannel?) -> Void)
        case cancelConsumer(CheckedContinuation<Void, Never>)
        case stop
    }

    enum Settlement: Sendable {
        case ack
        case nack(requeue: Bool)
    }

    /// A class, not a struct: it passes through the inbox, the driver and the confirm tracker, and each
    /// copy of a struct retained every reference in the message (about six copies per publish).
    final class PendingPublish: Sendable {
        let message: AMQPOutgoingMessage
        let continuation: CheckedContinuation<Void, any Error>
        let deadline: ContinuousClock.Instant

        init(message: AMQPOutgoingMessage, continuation: CheckedContinuation<Void, any Error>, deadline: ContinuousClock.Instant) {
            self.message = message
            self.continuation = continuation
            self.deadline = deadline
        }
    }

    struct Shared {
        var inbox: [Command] = []
        var connected = false
        var endpoint: AMQPEndpoint?
        var blocked = false
        var started = false
        var finished = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        /// Acks and nacks handed to the connection, and the frames that carried them (tests).
        var settlements = 0
        var settlementFrames = 0
    }

    let options: Options
    let logger: Logger
    let onConnect: (@Sendable (AMQPChannel) throws -> Void)?
    let shared = Mutex(Shared())
    /// A self-pipe: writing to `wakeFDs.1` interrupts the thread's `poll`.
    let wakeFDs: (Int32, Int32)
    /// Deliveries of a consumer connection; finishes when consuming stops or the connection shuts down.
    public let deliveries: AsyncStream<AMQPDelivery>
    let deliveryContinuation: AsyncStream<AMQPDelivery>.Continuation

    /// `onConnect` runs on every (re)connect before publishing or consuming starts: declare topology there.
    public init(options: Options, logger: Logger, onConnect: (@Sendable (AMQPChannel) throws -> Void)? = nil) {
        self.options = options
        var logger = logger
        logger[metadataKey: "amqp.connection"] = .string(options.name)
        self.logger = logger
        self.onConnect = onConnect
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "cannot create the AMQP wake-up pipe")
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        self.wakeFDs = (fds[0], fds[1])
        (self.deliveries, self.deliveryContinuation) = AsyncStream.makeStream(of: AMQPDelivery.self)
    }

    deinit {
        close(wakeFDs.0)
        close(wakeFDs.1)
    }

    /// True while a connection is established and set up.
    public var isConnected: Bool { shared.withLock { $0.connected } }

    /// Acks and nacks written so far, and the frames that carried them (`AckCoalescer` folds runs of
    /// acks into one frame).
    var settlementCounts: (settlements: Int, frames: Int) { shared.withLock { ($0.settlements, $0.settlementFrames) } }

    /// Starts the connection thread (once). Connecting happens in the background.
    public func start() {
        let shouldStart = shared.withLock { state -> Bool in
            guard state.started == false else { return false }
            state.started = true
            return true
        }
        guard shouldStart else { return }
        let thread = Thread { [self] in
            ConnectionDriver(connection: self).run()
            let waiters = shared.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.finished = true
                state.connected = false
                defer { state.exitWaiters = [] }
                return state.exitWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = "amqp-\(options.name)"
        thread.start()
    }

    /// Closes the connection (after sending everything already queued, such as acks) and waits for
    /// the thread to end. Unconfirmed publishes fail with `.shuttingDown`.
    public func shutdown() async {
        let started = shared.withLock { $0.started }
        guard started else {
            deliveryContinuation.finish()
            return
        }
        enqueue(.stop)
        await waitForExit()
    }

    /// Runs until graceful shutdown or cancellation, then closes.
    public func run() async throws {
        start()
        await withTaskCancellationOrGracefulShutdownHandler {
            await self.waitForExit()
        } onCancelOrGracefulShutdown: {
            self.enqueue(.stop)
        }
    }

    /// Returns once the connection thread has ended.
    private func waitForExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = shared.withLock { state -> Bool in
                if state.finished { return true }
                state.exitWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Waits up to `timeout` for the connection to be established; true when it is.
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if isConnected { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return isConnected
    }

    /// Publishes and returns once the broker confirmed the message; throws `AMQPError` when it was
    /// nacked, returned as unroutable, timed out, or the connection is down or blocked.
    public func publish(_ message: AMQPOutgoingMessage) async throws {
        let refusal = shared.withLock { state -> AMQPError? in
            if state.connected == false { return AMQPError(.notConnected, "not connected to the broker") }
            if state.blocked { return AMQPError(.blocked, "the broker is blocking publishers (resource alarm)") }
            return nil
        }
        if let refusal { throw refusal }
        let deadline = ContinuousClock.now + options.publishTimeout
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enqueue(.publish(PendingPublish(message: message, continuation: continuation, deadline: deadline)))
        }
    }

    /// Acknowledges a delivery of this connection.
    public func ack(_ delivery: AMQPDelivery) {
        enqueue(.settle(tag: delivery.deliveryTag, generation: delivery.generation, .ack))
    }

    /// Negatively acknowledges a delivery; `requeue: false` dead-letters it.
    public func nack(_ delivery: AMQPDelivery, requeue: Bool) {
        enqueue(.settle(tag: delivery.deliveryTag, generation: delivery.generation, .nack(requeue: requeue)))
    }

    /// Stops consuming (`basic.cancel`); deliveries already sent still arrive, then `deliveries` ends.
    public func cancelConsumer() async {
        let running = shared.withLock { $0.started && $0.finished == false }
        guard running else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            enqueue(.cancelConsumer(continuation))
        }
    }

    /// Runs `body` on the connection thread with a channel for declarations and other RPCs.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (AMQPChannel) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue(
                .perform { channel in
                    guard let channel else {
                        continuation.resume(throwing: AMQPError(.notConnected, "not connected to the broker"))
                        return
                    }
                    do {
                        continuation.resume(returning: try body(channel))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                })
        }
    }

    /// Hands `command` to the connection thread. Only the command that finds the inbox empty wakes
    /// the thread: it takes the whole inbox each time round, so later ones ride along (one `write`
    /// per burst of publishes instead of one per publish).
    func enqueue(_ command: Command) {
        let accepted = shared.withLock { state -> Bool? in
            guard state.finished == false else { return nil }
            state.inbox.append(command)
            return state.inbox.count == 1
        }
        if let wake = accepted {
            guard wake else { return }
            var one: UInt8 = 1
            _ = write(wakeFDs.1, &one, 1)
        } else {
            ConnectionDriver.refuse(command, AMQPError(.shuttingDown, "connection is closed"))
        }
    }
}

extension AMQPConnection.Options {
    /// One endpoint (tests, tools).
    public init(
        endpoint: AMQPEndpoint, tls: AMQPSettings.TLS = .init(), role: AMQPConnection.Role, name: String,
        heartbeat: Duration = .seconds(30), connectTimeout: Duration = .seconds(5), publishTimeout: Duration = .seconds(5)
    ) {
        self.init(
            endpoints: [endpoint], tls: tls, role: role, name: name, heartbeat: heartbeat, connectTimeout: connectTimeout,
            publishTimeout: publishTimeout)
    }

    /// The settings `amqp` gives every Herald process.
    public init(_ amqp: AMQPSettings, role: AMQPConnection.Role, name: String) {
        self.init(
            endpoints: amqp.endpoints, tls: amqp.tls, role: role, name: name, heartbeat: amqp.heartbeat,
            connectTimeout: amqp.connectTimeout, publishTimeout: amqp.publishTimeout)
    }
}
