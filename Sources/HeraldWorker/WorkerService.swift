import Foundation
import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldRuntime
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// The generic worker runtime: consume → verify and decode → carry out what `JobLifecycle` decides
/// (expiry, earlier outcome, throttles, ledger claim, provider call, outcome) → ack, retry through a
/// delay queue, or dead-letter.
///
/// A job's life: the API publishes it and records it `pending`. A worker claims it (`sending`) right
/// before calling the provider and records the outcome before acknowledging, so a redelivered job
/// (worker crash, lost connection) finds the outcome and is not sent twice. A job claimed by a worker
/// that died mid-call is "in doubt": the provider may have sent it, so by default it is not sent
/// again (`retryUncertain: true` resends instead). A retryable failure republishes the job to the
/// delay queue for its attempt and acks the original; it never waits by requeueing the delivery
/// (that would spin and burn the poison-message limit). Permanent failures go to `<queue>.dead` with
/// the reason in headers. Jobs past `expiresAt` are dropped: a late code is useless.
///
/// Throttles: the provider rate is handed out in delivery order by `ProviderPacer`, jobs waiting in
/// memory meanwhile (the broker keeps the rest, unacked, beyond prefetch). A per-number spacing wait
/// up to `throttleHold` is held in memory too; a longer one parks the job once in the throttle queue
/// that waits long enough, before it is claimed, so it stays claimable.
public final class WorkerService: Service {
    /// Tuning knobs (`workers.<type>` in configuration).
    public struct Settings: Sendable {
        public var concurrency: Int
        public var retryPolicy: RetryPolicy
        public var retryUncertain: Bool
        public var shutdownGrace: Duration
        /// Throttle queues, shortest first.
        public var throttleDelays: [Duration]
        /// Throttle waits up to this long are held in memory; longer ones park.
        public var throttleHold: Duration
        /// Identifies this process in the ledger (`host:pid:random`).
        public var instanceID: String
        /// The consumer's prefetch, for the start-up log (nil where the caller set up its own consumer).
        public var prefetch: Int?

        public init(
            concurrency: Int, retryPolicy: RetryPolicy, retryUncertain: Bool, shutdownGrace: Duration, throttleDelays: [Duration],
            throttleHold: Duration = .seconds(5), instanceID: String, prefetch: Int? = nil
        ) {
            self.concurrency = concurrency
            self.prefetch = prefetch
            self.retryPolicy = retryPolicy
            self.retryUncertain = retryUncertain
            self.shutdownGrace = shutdownGrace
            self.throttleDelays = throttleDelays
            self.throttleHold = throttleHold
            self.instanceID = instanceID
        }

        var lifecycle: JobLifecycle.Settings {
            JobLifecycle.Settings(
                retryPolicy: retryPolicy, retryUncertain: retryUncertain, throttleDelays: throttleDelays, holdLimit: throttleHold)
        }

        public init(_ worker: WorkerSettings) {
            self.init(
                concurrency: worker.concurrency, retryPolicy: RetryPolicy(delays: worker.retryDelays), retryUncertain: worker.retryUncertain,
                shutdownGrace: worker.shutdownGrace, throttleDelays: worker.throttleDelays, throttleHold: worker.throttleHold,
                instanceID: SecureRandom.instanceName(), prefetch: worker.prefetch)
        }
    }

    let handler: any JobHandler
    let ledger: any DeliveryLedger & RateLimitStore & BreakerStore
    /// Where deliveries come from and copies go (`AMQPJobQueue`, or `MemoryJobQueue` in tests).
    let queue: any JobQueue
    let settings: Settings
    /// Verifies `x-herald-signature` and signs continuations (`HeraldKeys.jobSigner`).
    let jobSigner: KeyedHMAC
    let clock: any WallClock
    let logger: Logger
    let stopping = Mutex(false)
    /// Every job of the consuming loop has finished (a shutdown grace ending later has nothing to cut).
    let drained = Mutex(false)
    /// Each provider's rate, handed out in line (providers without a rate have none).
    let pacers: [String: ProviderPacer]
    /// The pacer of a handler's only provider: its place in line is taken in delivery order.
    let soloPacer: ProviderPacer?
    /// Which provider each attempt goes to (routes, breakers, capacity).
    let router: ProviderRouter
    /// Who may publish besides herald-api, and what a foreign job must satisfy.
    let foreignJobs: ForeignJobPolicy
    let metrics: WorkerMetrics
    /// What the lifecycle decides by: the worker's settings and the handler's spacing, made once.
    let lifecycle: JobLifecycle.Settings

    public init(
        handler: any JobHandler, ledger: any DeliveryLedger & RateLimitStore & BreakerStore, queue: any JobQueue, settings: Settings,
        keys: HeraldKeys,
        foreignJobs: ForeignJobPolicy = .none, clock: any WallClock = SystemClock(), logger: Logger
    ) {
        self.foreignJobs = foreignJobs
        self.jobSigner = keys.jobSigner
        self.handler = handler
        self.ledger = ledger
        self.queue = queue
        self.settings = settings
        self.clock = clock
        self.logger = logger
        var pacers: [String: ProviderPacer] = [:]
        for provider in handler.providers {
            if let check = provider.rateCheck { pacers[provider.name] = ProviderPacer(store: ledger, check: check, clock: clock, logger: logger) }
        }
        self.pacers = pacers
        self.soloPacer = handler.providers.count == 1 ? pacers[handler.providers[0].name] : nil
        let breakers =
            handler.providers.contains { $0.breaker != nil }
            ? ProviderBreakers(providers: handler.providers, store: ledger, clock: clock, logger: logger) : nil
        self.router = ProviderRouter(providers: handler.providers, breakers: breakers)
        self.metrics = WorkerMetrics(type: handler.type.rawValue)
        var lifecycle = settings.lifecycle
        lifecycle.perNumberSpacing = handler.perDestinationSpacing
        self.lifecycle = lifecycle
        for code in handler.knownErrorCodes {
            for provider in handler.providers {
                Counter(label: "herald_worker_provider_errors_total", dimensions: [("provider", provider.name), ("code", code)]).increment(by: 0)
            }
        }
    }

    /// True while the consumer is connected.
    public var isReady: Bool { queue.isReady }

    public func run() async throws {
        await queue.start()
        var started: Logger.Metadata = ["queue": .string(queue.name), "concurrency": .stringConvertible(settings.concurrency)]
        if let prefetch = settings.prefetch {
            // What an operator tuning one of the two needs to see: the smaller one is what runs.
            started["prefetch"] = .stringConvertible(prefetch)
            started["effectiveConcurrency"] = .stringConvertible(min(settings.concurrency, prefetch))
        }
        let rates = handler.providers.compactMap { provider in provider.rateCheck.map { (provider.name, $0) } }
        if rates.count == 1, handler.providers.count == 1 {
            started["providerRate"] = .string(rates[0].1.policy.description)
        } else if rates.isEmpty == false {
            started["providerRates"] = .string(rates.map { "\($0.0)=\($0.1.policy.description)" }.joined(separator: ","))
        }
        if handler.providers.count > 1 { started["providers"] = .string(handler.providers.map(\.name).joined(separator: ",")) }
        for (provider, rate) in rates { await warnOfOtherRates(rate, provider: provider) }
        started["spacing"] = .string(DurationText.format(handler.perDestinationSpacing))
        metrics.settings(
            concurrency: settings.concurrency, prefetch: settings.prefetch, providerRates: rates.map { ($0.0, $0.1.policy) },
            spacing: handler.perDestinationSpacing)
        let breakers = router.breakers.map { breakers in Task { await breakers.run() } }
        defer { breakers?.cancel() }
        logger.info("worker started", metadata: started)
        // The grace runs from the stop request: when it ends, the consuming task is cancelled, which
        // hands back every job still waiting (throttle, pacer, a free slot) and lets provider calls
        // under way finish (`process`).
        let consuming = Task { await consumeUntilStopped() }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await consuming.value
                self.drained.withLock { $0 = true }
            } onCancel: {
                consuming.cancel()
            }
        } onGracefulShutdown: {
            self.stopping.withLock { $0 = true }
            Task { await self.queue.stopConsuming() }
            let grace = self.settings.shutdownGrace
            let logger = self.logger
            Task {
                try? await Task.sleep(for: grace)
                guard self.drained.withLock({ $0 }) == false else { return }
                logger.warning("shutdown grace elapsed; waiting jobs go back to the queue, provider calls under way finish")
                consuming.cancel()
            }
        }
        await queue.shutdown()
        logger.info("worker stopped")
    }

    /// Workers share a provider's rate through the store under a key that names the rate, so two that
    /// disagree on it do not share it at all: each spends its own. A key for the same provider under
    /// another rate, used in the last hour, means another worker runs with that rate.
    private func warnOfOtherRates(_ rate: LimitCheck, provider: String) async {
        guard let parts = LimitCheck.parse(rate.key),
            let states = try? await ledger.rateStates(kind: parts.kind, subject: parts.subject, project: parts.project)
        else { return }
        let recent = clock.now.addingTimeInterval(-3600).microsecondsSince1970
        let ours = rate.policy.description
        let live = Set(states.filter { $0.tat >= recent }.compactMap { LimitCheck.parse($0.key)?.policy }.filter { $0 != ours })
        guard live.isEmpty == false else { return }
        logger.warning(
            "another worker of this provider runs with a different rate; they do not share one (set the same rate everywhere)",
            metadata: [
                "provider": .string(provider), "rate": .string(rate.policy.description),
                "otherRates": .string(live.sorted().joined(separator: ",")),
            ])
    }

    private func consumeUntilStopped() async {
        let inFlight = InFlightGauge(type: handler.type)
        await withTaskGroup(of: Void.self) { group in
            // Children not yet reaped: the group is only reaped when full, so this is the admission
            // count, not what is in flight (finished jobs count here until the next delivery).
            var running = 0
            for await delivery in queue.deliveries {
                if running >= settings.concurrency, await group.next() != nil { running -= 1 }
                if stopping.withLock({ $0 }) {
                    // Shutting down (perhaps while this delivery waited for a free slot): hand back what
                    // has not started.
                    queue.requeue(delivery)
                    continue
                }
                running += 1
                inFlight.started()
                // The place in the provider's line is taken here, in delivery order.
                let ticket = soloPacer?.ticket()
                group.addTask {
                    await self.process(delivery, ticket: ticket)
                    if let ticket { self.soloPacer?.leave(ticket) }
                    inFlight.finished()
                }
            }
            // The consumer was cancelled: the jobs under way finish. When the shutdown grace ends first,
            // this task is cancelled (see `run`): jobs that have not reached the provider go back to the
            // queue; a provider call under way is never cut short (it finishes or hits the provider's
            // timeout and is recorded), so a clean shutdown leaves no job in doubt.
            await group.waitForAll()
        }
    }

    // MARK: one job

    func process(_ delivery: AMQPDelivery, ticket: ProviderPacer.Ticket? = nil) async {
        let type = handler.type.rawValue
        let job: Job
        let origin: ForeignJobPolicy.Origin
        switch JobAdmission.verdict(Self.envelope(of: delivery), queue: handler.type, policy: foreignJobs, own: jobSigner) {
        case .refused(let finish):
            await carryOut(finish, delivery: delivery, jobID: nil, reserved: nil, logger: logger)
            return
        case .admitted(let admitted, let verified, let foreignPrefix):
            (job, origin) = (admitted, verified)
            if let foreignPrefix, case .producer(let producer) = origin,
                let refusal = await admitForeign(job, from: producer, prefix: foreignPrefix)
            {
                await carryOut(refusal, delivery: delivery, jobID: nil, reserved: nil, logger: logger)
                return
            }
        }
        var log = logger
        log[metadataKey: "job.id"] = .string(job.id.lowercasedText)
        log[metadataKey: "project"] = .string(job.project)
        if case .string(let trace) = delivery.headers["traceparent"] { log[metadataKey: "traceparent"] = .string(trace) }

        // Only a job the broker redelivered, or one back from a retry or throttle queue, can have an outcome already.
        // Producers publish attempt 0 (so does a replay, which first marks the ledger row pending again).
        let retried = if case .int(let attempt) = delivery.headers[JobHeader.attempt] { attempt > 0 } else { false }
        let seenBefore = delivery.redelivered || retried || delivery.headers[JobHeader.throttled] != nil
        if seenBefore == false {
            // How long a fresh job waited in the queue: the backlog signal to scale workers on. Retries and
            // throttled returns are left out, since their waits are deliberate.
            metrics.queueWait.record(duration: .milliseconds(max(0, Int64(clock.now.timeIntervalSince(job.createdAt) * 1000))))
        }
        let spacing = handler.spacingChecks(for: job)
        let chain = handler.chain(for: job)
        // Routing is a throttle: a chain to choose from, a breaker or a rate to wait for.
        let routed = chain.count > 1 || router.breakers != nil || pacers.isEmpty == false
        var machine = JobLifecycle(
            expiresAt: job.expiresAt, seenBefore: seenBefore, throttled: spacing.isEmpty == false || routed, settings: lifecycle)
        var ticket = ticket
        // What the job's attempts met so far, and the provider the throttles chose for the next one.
        var attempts = handler.attempts(in: job)
        var provider: String? = routed ? nil : chain.first
        // Providers this delivery called, which an immediate failover passes over.
        var tried: Set<String> = []
        // A slot reserved for this job by an earlier check (carried through the throttle queue).
        var reserved: Int64? = if case .int(let slot) = delivery.headers[JobHeader.notBefore] { slot } else { nil }
        var report: DeliveryReport?
        var action = machine.start(now: clock.now)
        while true {
            switch action {
            case .readStatus:
                action = machine.statusRead(try? await ledger.deliveryStatus(jobID: job.id)?.status)
            case .checkThrottles:
                let throttle = await self.throttle(
                    job, spacing: spacing, reserved: &reserved, ticket: &ticket, route: (chain, attempts), provider: &provider)
                if case .refused(let limit, _) = throttle {
                    Counter(label: "herald_worker_throttled_total", dimensions: [("type", type), ("limit", limit)]).increment()
                }
                action = machine.throttleChecked(throttle, now: clock.now)
            case .hold(let wait):
                do {
                    try await Task.sleep(for: wait)
                } catch {
                    // Shutting down and past the grace: the job is not claimed, so it goes back to the
                    // queue now rather than asking the throttles again until its slot comes.
                    if let ticket { soloPacer?.leave(ticket) }
                    queue.requeue(delivery)
                    metrics.job(.requeued).increment()
                    return
                }
                action = machine.held(now: clock.now)
            case .claim:
                // Shutting down and past the grace: nothing has been sent, so the job goes back to the
                // queue instead of starting a provider call now.
                if Task.isCancelled {
                    queue.requeue(delivery)
                    metrics.job(.requeued).increment()
                    return
                }
                do {
                    action = machine.claimed(
                        try await ledger.claimDelivery(
                            jobID: job.id, projectID: job.project, type: job.type, destination: handler.destination(of: job),
                            owner: settings.instanceID,
                            description: handler.description(
                                of: job, provider: provider ?? handler.providerName, producer: origin.foreignProducer),
                            now: clock.now, reclaimInDoubt: settings.retryUncertain))
                } catch {
                    action = machine.claimFailed("\(error)")
                }
            case .deliver:
                let started = ContinuousClock.now
                // Not cancelled by a shutdown: a request that left finishes or times out (the provider's
                // timeout), and its outcome is recorded, instead of leaving the job in doubt.
                let handler = self.handler
                let now = clock.now
                let via = provider ?? handler.providerName
                router.started(via)
                tried.insert(via)
                let delivered = await Task { await handler.deliver(job, via: via, now: now) }.value
                router.finished(via)
                metrics.providerCall.record(duration: ContinuousClock.now - started)
                router.record(via, delivered.outcome, now: clock.now)
                if let code = delivered.outcome.errorCode {
                    Counter(label: "herald_worker_provider_errors_total", dimensions: [("provider", via), ("code", code)]).increment()
                }
                if handler.type == .sms { metrics.attempt(provider: via, delivered.outcome).increment() }
                report = delivered
                var failover: String? = nil
                switch delivered.outcome {
                case .providerFailure:
                    attempts.append(RouteChoice.Attempt(provider: via, met: .providerFailure))
                    failover = router.failover(after: via, chain: chain, attempts: attempts, tried: tried, now: clock.now)
                case .retryable:
                    attempts.append(RouteChoice.Attempt(provider: via, met: .retryLater))
                default:
                    break
                }
                action = machine.delivered(
                    delivered.outcome, segments: delivered.segments, now: clock.now, provider: chain.count > 1 ? via : nil, failover: failover)
            case .failOver(let record):
                do {
                    try await ledger.recordDelivery(
                        jobID: job.id, status: record.status, reason: record.reason, segments: nil, providerMessageID: nil, detail: record.detail,
                        now: clock.now)
                } catch {
                    log.error("cannot record the failed attempt", metadata: ["error": .string("\(error)")])
                }
                log.notice("provider failed; failing over", metadata: ["provider": .string(provider ?? ""), "detail": .string(record.detail ?? "")])
                provider = nil
                report = nil
                action = machine.failedOver(now: clock.now)
            case .finish(let finish):
                if let ticket { soloPacer?.leave(ticket) }
                let carried = handler.carrying(attempts, in: report?.continuation ?? job) ?? report?.continuation
                let outcome = await carryOut(
                    finish, delivery: continued(delivery, with: carried, of: job), jobID: job.id, reserved: reserved, logger: log)
                if outcome == .sent {
                    if let segments = report?.segments {
                        let country = handler.region(of: job)
                        metrics.segments(country: country, encoding: segments.encoding.rawValue).increment(by: segments.segments)
                        if let price = handler.price(inRegion: country) {
                            metrics.cost(country: country, currency: price.currency).increment(by: price.perSegment * Double(segments.segments))
                        }
                    }
                    metrics.enqueueToSent.record(duration: .milliseconds(max(0, Int64(clock.now.timeIntervalSince(job.createdAt) * 1000))))
                }
                return
            }
        }
    }

    /// Per-number spacing, then the provider (`ProviderRouter`), then the provider's turn from its pacer.
    ///
    /// Spacing has two parts. The first check reserves the job's slot (`rateReserve` on the number's
    /// slot key): jobs for one number line up one spacing apart and each waits for exactly its own
    /// slot, held in memory or parked (the slot travels in `x-herald-not-before`) instead of asking
    /// again and again. At its slot the job passes the spacing limit itself (`rateDecision` on the
    /// number's key), which guarantees the gap between actual sends even when an earlier job left late;
    /// a refusal there is short and held. While a job waits it gives up its place in the provider's
    /// line (it must not hold up the jobs behind it) and takes a new one when its slot comes.
    ///
    /// A job whose chain has no provider to call now (every breaker open, every account full) waits
    /// like a throttled one, until the earliest comes back.
    private func throttle(
        _ job: Job, spacing: [LimitCheck], reserved: inout Int64?, ticket: inout ProviderPacer.Ticket?,
        route: (chain: [String], attempts: [RouteChoice.Attempt]), provider: inout String?
    ) async -> JobLifecycle.Throttle {
        func giveUpTicket() {
            if let held = ticket {
                soloPacer?.leave(held)
                ticket = nil
            }
        }
        if spacing.isEmpty == false {
            func waiting(_ limit: LimitCheck, _ wait: Duration) -> JobLifecycle.Throttle {
                giveUpTicket()
                return .refused(limit: limit.kind.configurationKey, retryAfter: wait)
            }
            do {
                let now = clock.now.microsecondsSince1970
                if reserved == nil {
                    var slot = now
                    for check in spacing {
                        slot = max(slot, try await ledger.rateReserve(key: check.key + "#slots", parameters: GCRA.Parameters(check.policy), now: now))
                    }
                    reserved = slot
                }
                if let slot = reserved, slot > now { return waiting(spacing[0], .microseconds(slot - now)) }
                if let refusal = try await RateLimiter(store: ledger).admit(spacing, now: clock.now) {
                    return waiting(refusal.check, refusal.retryAfter)
                }
            } catch {
                logger.error("throttle unavailable (store error); sending unthrottled", metadata: ["error": .string("\(error)")])
            }
        }
        let now = clock.now
        switch await router.choose(chain: route.chain, attempts: route.attempts, now: now) {
        case .send(let chosen):
            provider = chosen
        case .wait(let until):
            giveUpTicket()
            let wait = until.map { Duration.milliseconds(max(1, Int64($0.timeIntervalSince(now) * 1000))) } ?? ProviderRouter.heldRetry
            return .refused(limit: "sms.breaker", retryAfter: wait)
        case .noRoute:
            giveUpTicket()
            return .refused(limit: "sms.routes", retryAfter: ProviderRouter.heldRetry)
        }
        guard let chosen = provider, let pacer = pacers[chosen] else { return .allowed }
        let turn = (pacer === soloPacer ? ticket : nil) ?? pacer.ticket()
        ticket = nil
        let throttle = await pacer.wait(turn, expiresAt: job.expiresAt)
        if pacer !== soloPacer { pacer.leave(turn) }
        return throttle
    }

    /// What the store says of a foreign job the policy admitted (its prefix's block, then its ledger
    /// row): nil when it may go on, else how it ends (`JobAdmission.foreign`).
    private func admitForeign(_ job: Job, from producer: String, prefix: String) async -> JobLifecycle.Finish? {
        do {
            let block = try await ledger.prefixBlock(projectID: job.project, prefix: prefix, now: clock.now)
            var recorded = false
            if block == nil {
                recorded = try await ledger.recordPending(
                    jobID: job.id, projectID: job.project, type: job.type, destination: handler.destination(of: job), producer: producer,
                    now: clock.now)
            }
            return JobAdmission.foreign(job, producer: producer, prefix: prefix, block: block, recorded: recorded)
        } catch {
            return JobAdmission.storeUnavailable("\(error)")
        }
    }

    /// The headers admission reads, as they came (a producer id cut to 64 characters).
    static func envelope(of delivery: AMQPDelivery) -> JobAdmission.Envelope {
        let schema: Int64? = if case .int(let schema) = delivery.headers[JobHeader.schema] { schema } else { nil }
        let signature: String? = if case .string(let text) = delivery.headers[JobSignature.header] { text } else { nil }
        var producer: String? = nil
        if case .string(let text) = delivery.headers[JobHeader.producer], text.isEmpty == false { producer = String(text.prefix(64)) }
        return JobAdmission.Envelope(schema: schema, producer: producer, signature: signature, messageID: delivery.messageID, body: delivery.body)
    }

    /// The delivery as it is settled: with `continuation`'s body, signed like herald-api signs jobs,
    /// when the handler made progress a retry must not repeat (only a continuation of the same job,
    /// whose ledger row it matches, is taken).
    func continued(_ delivery: AMQPDelivery, with continuation: Job?, of job: Job) -> AMQPDelivery {
        guard let continuation, continuation.id == job.id, continuation.project == job.project, continuation.type == job.type,
            handler.destination(of: continuation) == handler.destination(of: job)
        else { return delivery }
        var copy = delivery
        copy.body = JobCodec.encode(continuation)
        copy.headers[JobSignature.header] = .string(JobSignature.sign(copy.body, signer: jobSigner))
        return copy
    }

    /// Records the outcome (when there is one), then settles the delivery as the lifecycle decided,
    /// counts and logs it. Returns the outcome counted: the finish's, or what became of the delivery
    /// when the queue did not take its copy (`JobLifecycle.republishFailed`).
    @discardableResult
    private func carryOut(_ finish: JobLifecycle.Finish, delivery: AMQPDelivery, jobID: UUID?, reserved: Int64?, logger log: Logger) async
        -> JobOutcome
    {
        if let record = finish.record, let jobID {
            if record.status == .uncertain {
                // Kept so an operator can resend it once (`herald-admin messages resolve --resend`).
                try? await ledger.keepUncertainJob(jobID: jobID, body: delivery.body)
            }
            do {
                try await ledger.recordDelivery(
                    jobID: jobID, status: record.status, reason: record.reason, segments: record.segments,
                    providerMessageID: record.providerMessageID, detail: record.detail, now: clock.now)
            } catch {
                log.error("cannot record the delivery outcome", metadata: ["error": .string("\(error)")])
            }
        }
        if let status = finish.duplicateOf, let jobID {
            // History only: a failure here changes nothing about the job.
            try? await ledger.noteDelivery(
                jobID: jobID, status: .duplicateSkipped, detail: "a copy of this \(MessageStatus(status).rawValue) job was skipped", now: clock.now)
        }
        var outcome = finish.outcome
        var details = finish.note.details.mapValues { Logger.MetadataValue.string($0) }
        do {
            switch finish.settlement {
            case .ack:
                queue.ack(delivery)
            case .requeue(let pause):
                try? await Task.sleep(for: pause)
                queue.requeue(delivery)
            case .deadLetter(let reason, let attempt):
                try await queue.deadLetter(delivery, reason: reason, attempt: attempt, failedAt: clock.now)
                queue.ack(delivery)
            case .retry(let delay, let attempt):
                try await queue.publishDelayed(delivery, .retry(delay: delay, attempt: attempt))
                queue.ack(delivery)
            case .park(let delay):
                try await queue.publishDelayed(delivery, .throttle(delay: delay, notBefore: reserved))
                queue.ack(delivery)
            }
        } catch {
            // The copy is not confirmed, so the original stays with the broker: back to the work queue,
            // or, for a dead letter, to the broker's own dead-lettering (reason `rejected`).
            let fallback = JobLifecycle.republishFailed(finish.settlement)
            if fallback.requeue { queue.requeue(delivery) } else { queue.reject(delivery) }
            outcome = fallback.outcome
            details["republish"] = .string(fallback.requeue ? "failed; requeued" : "failed; rejected")
            log.error(
                fallback.requeue ? "cannot republish the job; requeued" : "cannot publish to the dead-letter queue; rejecting",
                metadata: ["error": .string("\(error)")])
        }
        metrics.job(outcome).increment()
        log.log(level: finish.note.level.logLevel, "\(finish.note.message)", metadata: details)
        return outcome
    }
}

extension JobLifecycle.Note.Level {
    var logLevel: Logger.Level {
        switch self {
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        }
    }
}

/// `herald_worker_in_flight{type}`: jobs started and not yet finished, counted by the jobs themselves,
/// not read from the task group, whose unreaped children only shrink when the group is full (an idle
/// worker would go on reporting dozens of jobs in flight).
/// Recorded under the lock: two jobs finishing at once must not leave the older value last.
final class InFlightGauge: Sendable {
    private let count = Mutex(0)
    private let gauge: Gauge

    init(type: JobType) {
        gauge = Gauge(label: "herald_worker_in_flight", dimensions: [("type", type.rawValue)])
        gauge.record(0)
    }

    func started() { change(by: 1) }
    func finished() { change(by: -1) }

    private func change(by delta: Int) {
        count.withLock { count in
            count += delta
            gauge.record(count)
        }
    }
}
