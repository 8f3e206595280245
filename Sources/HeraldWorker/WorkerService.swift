import Crypto
import Foundation
import HeraldAMQP
import HeraldCore
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// The generic worker runtime: consume → decode → drop if expired → skip if already handled →
/// throttle → claim in the ledger → deliver → ack, retry through a delay queue, or dead-letter.
///
/// A job's life: the API publishes it and records it `pending`. A worker claims it (`sending`) right
/// before calling the provider and records the outcome before acknowledging, so a redelivered job
/// (worker crash, lost connection) finds the outcome and is not sent twice. A job claimed by a worker
/// that died mid-call is "in doubt": the provider may have sent it, so by default it is not sent
/// again (`retryUncertain: true` resends instead). A retryable failure republishes the job to the
/// delay queue for its attempt and acks the original; it never waits by holding or requeueing the
/// delivery (that would spin and burn the poison-message limit). Permanent failures go to
/// `<queue>.dead` with the reason in headers. Jobs past `expiresAt` are dropped: a late code is useless.
/// A job refused by a throttle (provider rate, spacing per number) is republished to the throttle
/// queue that waits long enough and acked, before it is claimed, so it stays claimable; it is dropped
/// only if it would expire while waiting.
public final class WorkerService: Service {
    /// Tuning knobs (`workers.<type>` in configuration).
    public struct Settings: Sendable {
        public var concurrency: Int
        public var retryPolicy: RetryPolicy
        public var retryUncertain: Bool
        public var shutdownGrace: Duration
        /// Throttle queues, shortest first.
        public var throttleDelays: [Duration]
        /// Identifies this process in the ledger (`host:pid:random`).
        public var instanceID: String

        public init(
            concurrency: Int, retryPolicy: RetryPolicy, retryUncertain: Bool, shutdownGrace: Duration, throttleDelays: [Duration],
            instanceID: String
        ) {
            self.concurrency = concurrency
            self.retryPolicy = retryPolicy
            self.retryUncertain = retryUncertain
            self.shutdownGrace = shutdownGrace
            self.throttleDelays = throttleDelays
            self.instanceID = instanceID
        }

        public init(_ worker: HeraldConfiguration.Worker) {
            self.init(
                concurrency: worker.concurrency, retryPolicy: RetryPolicy(delays: worker.retryDelays), retryUncertain: worker.retryUncertain,
                shutdownGrace: worker.shutdownGrace, throttleDelays: worker.throttleDelays,
                instanceID: "\(ProcessInfo.processInfo.hostName):\(getpid()):\(SecureRandom.alphanumeric(6))")
        }
    }

    let handler: any JobHandler
    let ledger: any DeliveryLedger & RateLimitStore
    let consumer: AMQPConnection
    let publisher: AMQPConnection
    let topology: Topology
    let settings: Settings
    /// Verifies `x-herald-signature` (`HeraldKeys.jobSigning`).
    let jobKey: SymmetricKey
    let clock: any WallClock
    let logger: Logger
    let stopping = Mutex(false)

    public init(
        handler: any JobHandler, ledger: any DeliveryLedger & RateLimitStore, consumer: AMQPConnection, publisher: AMQPConnection, topology: Topology,
        settings: Settings, keys: HeraldKeys, clock: any WallClock = SystemClock(), logger: Logger
    ) {
        self.jobKey = keys.jobSigning
        self.handler = handler
        self.ledger = ledger
        self.consumer = consumer
        self.publisher = publisher
        self.topology = topology
        self.settings = settings
        self.clock = clock
        self.logger = logger
    }

    /// The two connections a worker needs: a consumer of `<exchange>.<type>` with `prefetch`, and a
    /// confirm-mode publisher for retries and dead letters (separate, because a blocked publishing
    /// connection must not block acks). Both declare the topology when they connect.
    public static func connections(
        configuration: HeraldConfiguration, type: JobType, logger: Logger
    ) -> (consumer: AMQPConnection, publisher: AMQPConnection, topology: Topology) {
        let topology = Topology(configuration: configuration)
        let declare: @Sendable (AMQPChannel) throws -> Void = { channel in
            do {
                try topology.declare(on: channel, types: [type])
            } catch {
                logger.error("cannot declare the broker topology", metadata: ["error": .string("\(error)")])
                throw error
            }
        }
        let consumer = AMQPConnection(
            options: .init(
                configuration.amqp, role: .consumer(queue: topology.workQueue(type), prefetch: configuration.amqp.prefetch),
                name: "herald-\(type.rawValue)-worker consumer"),
            logger: logger, onConnect: declare)
        let publisher = AMQPConnection(
            options: .init(configuration.amqp, role: .publisher, name: "herald-\(type.rawValue)-worker publisher"),
            logger: logger, onConnect: declare)
        return (consumer, publisher, topology)
    }

    /// True while the consumer is connected.
    public var isReady: Bool { consumer.isConnected }

    public func run() async throws {
        publisher.start()
        // Consume only once retries and dead letters can be published: a job taken before that could only
        // be rejected, and the broker's own dead-lettering would drop Herald's reason.
        while publisher.isConnected == false, stopping.withLock({ $0 }) == false, Task.isCancelled == false,
            Task.isShuttingDownGracefully == false
        {
            _ = await publisher.waitUntilConnected(timeout: .milliseconds(200))
        }
        consumer.start()
        logger.info(
            "worker started",
            metadata: ["queue": .string(topology.workQueue(handler.type)), "concurrency": .stringConvertible(settings.concurrency)])
        await withGracefulShutdownHandler {
            await consumeUntilStopped()
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            Task { await self.consumer.cancelConsumer() }
        }
        await consumer.shutdown()
        await publisher.shutdown()
        logger.info("worker stopped")
    }

    private func consumeUntilStopped() async {
        let inFlight = Gauge(label: "herald_worker_in_flight", dimensions: [("type", handler.type.rawValue)])
        // Child tasks return true only for the grace timer.
        await withTaskGroup(of: Bool.self) { group in
            var running = 0
            for await delivery in consumer.deliveries {
                if stopping.withLock({ $0 }) {
                    // Shutting down: hand back what has not started.
                    consumer.nack(delivery, requeue: true)
                    continue
                }
                if running >= settings.concurrency, await group.next() != nil { running -= 1 }
                running += 1
                inFlight.record(running)
                group.addTask {
                    await self.process(delivery)
                    return false
                }
            }
            // The consumer was cancelled: let in-flight jobs finish within the grace period, then
            // cancel the rest (their provider calls are abandoned and the jobs recorded as in doubt).
            group.addTask {
                try? await Task.sleep(for: self.settings.shutdownGrace)
                return true
            }
            while running > 0, let isTimer = await group.next(), isTimer == false {
                running -= 1
                inFlight.record(running)
            }
            if running > 0 { logger.warning("shutdown grace elapsed; abandoning in-flight jobs", metadata: ["count": .stringConvertible(running)]) }
            group.cancelAll()
        }
        inFlight.record(0)
    }

    // MARK: one job

    func process(_ delivery: AMQPDelivery) async {
        let type = handler.type.rawValue
        func count(_ outcome: String) {
            Counter(label: "herald_worker_jobs_total", dimensions: [("type", type), ("outcome", outcome)]).increment()
        }
        if case .int(let schema) = delivery.headers["x-herald-schema"], schema != Int64(Job.schemaVersion) {
            await deadLetter(delivery, reason: "unsupported x-herald-schema \(schema)", attempt: 0)
            count("malformed")
            return
        }
        // Nothing from the broker is read, let alone sent, before it proves it came from herald-api.
        let signature: String? = if case .string(let text) = delivery.headers[JobSignature.header] { text } else { nil }
        guard JobSignature.verify(delivery.body, signature: signature, key: jobKey) else {
            logger.error(
                "unauthenticated job dead-lettered",
                metadata: ["message.id": .string(delivery.messageID ?? "-"), "signed": .stringConvertible(signature != nil)])
            await deadLetter(
                delivery,
                reason:
                    "unauthenticated: \(signature == nil ? "no" : "an invalid") \(JobSignature.header) (workers send only jobs herald-api signed)",
                attempt: 0)
            count("unauthenticated")
            return
        }
        let job: Job
        do {
            job = try JobCodec.decode(delivery.body)
        } catch {
            logger.error(
                "malformed job dead-lettered", metadata: ["message.id": .string(delivery.messageID ?? "-"), "problem": .string(error.description)])
            await deadLetter(delivery, reason: "malformed job: \(error.description)", attempt: 0)
            count("malformed")
            return
        }
        guard job.type == handler.type else {
            await deadLetter(delivery, reason: "a \(job.type.rawValue) job in the \(type) queue", attempt: 0)
            count("malformed")
            return
        }
        var log = logger
        log[metadataKey: "job.id"] = .string(job.id.uuidString.lowercased())
        log[metadataKey: "project"] = .string(job.project)
        if case .string(let trace) = delivery.headers["traceparent"] { log[metadataKey: "traceparent"] = .string(trace) }
        let destination = handler.destination(of: job)

        if clock.now >= job.expiresAt {
            try? await ledger.recordDelivery(jobID: job.id, status: .expired, reason: "expired before it could be sent", now: clock.now)
            consumer.ack(delivery)
            count("expired")
            log.notice("job expired before sending; dropped")
            return
        }

        if let status = try? await ledger.deliveryStatus(jobID: job.id)?.status, status.isFinal {
            consumer.ack(delivery)
            count("duplicate")
            log.info("job already handled; skipped", metadata: ["status": .string(status.rawValue)])
            return
        }
        if await throttled(delivery, job: job, logger: log, count: count) { return }

        let claim: DeliveryClaim
        do {
            claim = try await claimDelivery(job, destination: destination)
        } catch {
            // The store is unavailable: give the job back and try later.
            log.error("cannot claim job in the store; requeueing", metadata: ["error": .string("\(error)")])
            try? await Task.sleep(for: .seconds(1))
            consumer.nack(delivery, requeue: true)
            count("store_error")
            return
        }
        let attempt: Int
        switch claim {
        case .finished(let status):
            consumer.ack(delivery)
            count("duplicate")
            log.info("job already handled; skipped", metadata: ["status": .string(status.rawValue)])
            return
        case .inDoubt(let owner):
            try? await ledger.recordDelivery(
                jobID: job.id, status: .uncertain, reason: "an earlier attempt by \(owner) may have reached the provider", now: clock.now)
            consumer.ack(delivery)
            count("uncertain")
            log.warning("job in doubt (an earlier attempt may have been sent); not resending", metadata: ["previous.owner": .string(owner)])
            return
        case .claimed(let value):
            attempt = value
        case .unknown, .mismatch:
            // Signed, yet not what the API recorded: never send it.
            let why = if case .mismatch(let field) = claim { "the ledger's \(field) differs from the job's" } else { "no ledger row for this job id" }
            log.error("job does not match the ledger; dead-lettered", metadata: ["problem": .string(why)])
            await deadLetter(delivery, reason: "unauthenticated: \(why)", attempt: 0)
            count("unauthenticated")
            return
        }

        let started = ContinuousClock.now
        let report = await handler.deliver(job, now: clock.now)
        Timer(label: "herald_worker_provider_seconds", dimensions: [("type", type)]).record(duration: ContinuousClock.now - started)
        if case .sent = report.outcome, let segments = report.segments {
            try? await ledger.recordSegments(jobID: job.id, segments: segments)
            Counter(
                label: "herald_sms_segments_total", dimensions: [("country", handler.region(of: job)), ("encoding", segments.encoding.rawValue)]
            ).increment(by: segments.segments)
        }
        await settle(delivery, job: job, attempt: attempt, outcome: report.outcome, logger: log, count: count)
    }

    /// True when a throttle refused the job and it was parked in a throttle queue (or dropped because
    /// it would expire first). The job has not been claimed, so it stays claimable when it returns.
    private func throttled(_ delivery: AMQPDelivery, job: Job, logger log: Logger, count: (String) -> Void) async -> Bool {
        let checks = handler.throttleChecks(for: job)
        guard checks.isEmpty == false else { return false }
        let refusal: RateLimiter.Refusal?
        do {
            refusal = try await RateLimiter(store: ledger).admit(checks, now: clock.now)
        } catch {
            log.error("throttle unavailable (store error); sending unthrottled", metadata: ["error": .string("\(error)")])
            return false
        }
        guard let refusal else { return false }
        Counter(label: "herald_worker_throttled_total", dimensions: [("type", handler.type.rawValue), ("limit", refusal.check.kind.rawValue)])
            .increment()
        let delay = RetryPolicy.queueDelay(for: refusal.retryAfter, in: settings.throttleDelays)
        guard clock.now.adding(max(delay, refusal.retryAfter)) < job.expiresAt else {
            try? await ledger.recordDelivery(
                jobID: job.id, status: .expired, reason: "throttled (\(refusal.check.kind.configurationKey)) until past expiresAt", now: clock.now)
            consumer.ack(delivery)
            count("expired")
            log.notice("throttled job would expire before its turn; dropped", metadata: ["limit": .string(refusal.check.kind.configurationKey)])
            return true
        }
        var headers = Self.carriedHeaders(delivery.headers)
        var throttledCount: Int64 = 1
        if case .int(let previous) = delivery.headers["x-herald-throttled"] { throttledCount = previous + 1 }
        headers["x-herald-throttled"] = .int(throttledCount)
        if case .int(let attempt) = delivery.headers["x-herald-attempt"] { headers["x-herald-attempt"] = .int(attempt) }
        let parked = AMQPOutgoingMessage(
            exchange: "", routingKey: topology.throttleQueue(handler.type, delay: delay), body: delivery.body, messageID: delivery.messageID,
            type: delivery.type, contentType: delivery.contentType, headers: headers)
        do {
            try await publisher.publish(parked)
            consumer.ack(delivery)
            count("throttled")
            log.debug(
                "throttled; parked", metadata: ["limit": .string(refusal.check.kind.configurationKey), "delay": .string(DurationText.format(delay))])
        } catch {
            consumer.nack(delivery, requeue: true)
            log.error("cannot park a throttled job; requeued", metadata: ["error": .string("\(error)")])
        }
        return true
    }

    private func claimDelivery(_ job: Job, destination: String) async throws -> DeliveryClaim {
        try await ledger.claimDelivery(
            jobID: job.id, projectID: job.project, type: job.type, destination: destination, owner: settings.instanceID, now: clock.now,
            reclaimInDoubt: settings.retryUncertain)
    }

    private func settle(
        _ delivery: AMQPDelivery, job: Job, attempt: Int, outcome: DeliveryOutcome, logger log: Logger, count: (String) -> Void
    ) async {
        var outcome = outcome
        if case .uncertain(let reason) = outcome, settings.retryUncertain {
            outcome = .retryable(reason: reason, retryAfter: nil)
        }
        switch outcome {
        case .sent:
            await record(job, .sent, nil)
            consumer.ack(delivery)
            count("sent")
            Timer(label: "herald_worker_enqueue_to_sent_seconds", dimensions: [("type", handler.type.rawValue)])
                .record(duration: .milliseconds(max(0, Int64(clock.now.timeIntervalSince(job.createdAt) * 1000))))
            log.info("sent", metadata: ["attempt": .stringConvertible(attempt)])
        case .uncertain(let reason):
            await record(job, .uncertain, reason)
            consumer.ack(delivery)
            count("uncertain")
            log.warning("outcome unknown; not resending", metadata: ["reason": .string(reason)])
        case .permanent(let reason):
            await deadLetter(delivery, reason: reason, attempt: attempt)
            await record(job, .failed, reason)
            count("failed")
            log.warning("permanent failure; dead-lettered", metadata: ["reason": .string(reason), "attempt": .stringConvertible(attempt)])
        case .retryable(let reason, let retryAfter):
            switch settings.retryPolicy.decide(failures: attempt, retryAfter: retryAfter, now: clock.now, expiresAt: job.expiresAt) {
            case .retry(let delay):
                await record(job, .retrying, reason)
                do {
                    try await publisher.publish(retryCopy(of: delivery, delay: delay, attempt: attempt))
                    consumer.ack(delivery)
                    count("retry")
                    log.notice(
                        "retryable failure; retrying later",
                        metadata: ["reason": .string(reason), "attempt": .stringConvertible(attempt), "delay": .string(DurationText.format(delay))])
                } catch {
                    // Could not park it in a delay queue: give it back to the work queue instead.
                    consumer.nack(delivery, requeue: true)
                    count("requeued")
                    log.error("cannot publish the retry; requeued", metadata: ["error": .string("\(error)")])
                }
            case .giveUp(.wouldExpire):
                await record(job, .expired, "\(reason); the next attempt would be after expiresAt")
                consumer.ack(delivery)
                count("expired")
                log.notice("retryable failure but the code would expire first; dropped", metadata: ["reason": .string(reason)])
            case .giveUp(.exhausted):
                let why = "retries exhausted after \(attempt) attempts; last: \(reason)"
                await deadLetter(delivery, reason: why, attempt: attempt)
                await record(job, .failed, why)
                count("failed")
                log.warning("retries exhausted; dead-lettered", metadata: ["reason": .string(reason)])
            }
        }
    }

    private func record(_ job: Job, _ status: DeliveryStatus, _ reason: String?) async {
        do {
            try await ledger.recordDelivery(jobID: job.id, status: status, reason: reason, now: clock.now)
        } catch {
            logger.error("cannot record the delivery outcome", metadata: ["job.id": .string(job.id.uuidString), "error": .string("\(error)")])
        }
    }

    /// The job as it goes to the delay queue: same body and id, attempt counter raised; the delay
    /// queue's TTL then dead-letters it back to the work queue.
    func retryCopy(of delivery: AMQPDelivery, delay: Duration, attempt: Int) -> AMQPOutgoingMessage {
        var headers = Self.carriedHeaders(delivery.headers)
        headers["x-herald-attempt"] = .int(Int64(attempt))
        return AMQPOutgoingMessage(
            exchange: "", routingKey: topology.retryQueue(handler.type, delay: delay), body: delivery.body, messageID: delivery.messageID,
            type: delivery.type, contentType: delivery.contentType, headers: headers)
    }

    /// Publishes the delivery to `<queue>.dead` with the reason, then acks it; if the dead-letter
    /// publish fails the delivery is rejected so the broker dead-letters it itself (reason `rejected`).
    func deadLetter(_ delivery: AMQPDelivery, reason: String, attempt: Int) async {
        var headers = Self.carriedHeaders(delivery.headers)
        headers["x-herald-reason"] = .string(reason)
        headers["x-herald-attempt"] = .int(Int64(attempt))
        headers["x-herald-failed-at"] = .string(Timestamp.format(clock.now))
        let message = AMQPOutgoingMessage(
            exchange: topology.deadLetterExchange, routingKey: handler.type.rawValue, body: delivery.body, messageID: delivery.messageID,
            type: delivery.type, contentType: delivery.contentType, headers: headers)
        do {
            try await publisher.publish(message)
            consumer.ack(delivery)
        } catch {
            logger.error("cannot publish to the dead-letter queue; rejecting", metadata: ["error": .string("\(error)")])
            consumer.nack(delivery, requeue: false)
        }
    }

    /// Headers a job keeps when republished (not the broker's own `x-death` bookkeeping).
    static func carriedHeaders(_ headers: [String: AMQPHeaderValue]) -> [String: AMQPHeaderValue] {
        headers.filter { Job.carriedHeaders.contains($0.key) }
    }
}
