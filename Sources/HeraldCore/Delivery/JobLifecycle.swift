import Foundation

/// Everything a worker decides about one job, as a state machine in the style of postgres-nio's:
/// the worker reports what happened (an event), the machine answers what to do next (an action).
/// No I/O and no clock of its own: events that need the time bring `now`. The delivery guarantees live
/// here, so they are tested case by case without a broker (`JobLifecycleTests`); `WorkerService`
/// only carries the actions out.
///
/// The path of a job: expiry → (for a job seen before: an earlier outcome?) → throttles (held in
/// memory for short waits, parked in a throttle queue for long ones) → claim in the ledger →
/// provider → outcome recorded → ack, retry through a delay queue, or dead letter. The outcome is
/// always recorded before the delivery is settled.
public struct JobLifecycle: Sendable {
    public struct Settings: Sendable, Equatable {
        public var retryPolicy: RetryPolicy
        /// Resend jobs whose earlier attempt may have reached the provider (risking a duplicate).
        public var retryUncertain: Bool
        /// The throttle queues, shortest first.
        public var throttleDelays: [Duration]
        /// Throttle waits up to this long are held in memory (no republish, order kept); longer ones
        /// park the job in a throttle queue, once.
        public var holdLimit: Duration
        /// The least time between two sends to one destination (zero: none). A retry cannot run before
        /// it has passed since this attempt, whatever its backoff, so the retry's event says so.
        public var perNumberSpacing: Duration

        public init(
            retryPolicy: RetryPolicy, retryUncertain: Bool, throttleDelays: [Duration], holdLimit: Duration, perNumberSpacing: Duration = .zero
        ) {
            self.retryPolicy = retryPolicy
            self.retryUncertain = retryUncertain
            self.throttleDelays = throttleDelays
            self.holdLimit = holdLimit
            self.perNumberSpacing = perNumberSpacing
        }
    }

    /// What the worker does next.
    public enum Action: Sendable, Equatable {
        /// Read the ledger for an earlier outcome (the job was delivered before, or comes back from a queue).
        case readStatus
        /// Ask the throttles (per-number spacing, provider rate) whether the job may go now.
        case checkThrottles
        /// Keep the job in memory for this long, then report `held(now:)`.
        case hold(Duration)
        /// Claim the job in the ledger.
        case claim
        /// Call the provider; this is the `attempt`-th send.
        case deliver(attempt: Int)
        /// The provider failed and another one of the route may take the job now: write `Record` (the
        /// attempt, for the ledger's history), then report `failedOver(now:)`; the job goes through the
        /// throttles (which pick the next provider) and is claimed again.
        case failOver(Record)
        /// The end: record (when given), settle the delivery, count and log.
        case finish(Finish)
    }

    /// How the delivery leaves the worker.
    public enum Settlement: Sendable, Equatable {
        case ack
        /// Publish to `<queue>.dead` with the reason, then ack (reject when that publish fails).
        case deadLetter(reason: String, attempt: Int)
        /// Publish to the retry queue waiting `delay`, then ack (requeue when that publish fails).
        case retry(delay: Duration, attempt: Int)
        /// Publish to the throttle queue waiting `delay`, then ack (requeue when that publish fails).
        case park(delay: Duration)
        /// Give the delivery back to the work queue after `after` (the store is unavailable).
        case requeue(after: Duration)
    }

    /// A ledger write before settling.
    public struct Record: Sendable, Equatable {
        public var status: DeliveryStatus
        public var reason: String?
        /// For a sent SMS: how it was encoded.
        public var segments: SMSSegments?
        /// The provider's id for the message, when it gave one.
        public var providerMessageID: String?
        /// The event's text for operators (nil: the reason).
        public var detail: String?

        public init(status: DeliveryStatus, reason: String?, segments: SMSSegments? = nil, providerMessageID: String? = nil, detail: String? = nil) {
            self.status = status
            self.reason = reason
            self.segments = segments
            self.providerMessageID = providerMessageID
            self.detail = detail
        }
    }

    /// What the worker carries out at the end, and how it reports it.
    public struct Finish: Sendable, Equatable {
        public var record: Record?
        /// The job was a copy of one the ledger has in this final status: note a `duplicate-skipped`
        /// event, leave the status.
        public var duplicateOf: DeliveryStatus? = nil
        public var settlement: Settlement
        /// The `herald_worker_jobs_total` outcome label.
        public var outcome: JobOutcome
        public var note: Note
    }

    /// A log line: how loud, what, and the details that go with it.
    public struct Note: Sendable, Equatable {
        public enum Level: Sendable, Equatable {
            case debug, info, notice, warning, error
        }
        public var level: Level
        public var message: String
        public var details: [String: String]

        public init(_ level: Level, _ message: String, _ details: [String: String] = [:]) {
            self.level = level
            self.message = message
            self.details = details
        }
    }

    /// What the throttles answered.
    public enum Throttle: Sendable, Equatable {
        case allowed
        /// `limit` (its configuration key) lets the job go after `retryAfter`.
        case refused(limit: String, retryAfter: Duration)
        /// The provider's pace would only reach this job after it expired (`limit` as above).
        case wouldExpire(limit: String)
        /// The store could not be asked: the job goes unthrottled rather than not at all.
        case unavailable
    }

    enum State: Sendable, Equatable {
        case received
        case readingStatus
        case throttling
        case holding
        case claiming
        case delivering(attempt: Int)
        case failingOver
        case finished
    }

    let expiresAt: Date
    let seenBefore: Bool
    let throttled: Bool
    let settings: Settings
    var state = State.received
    /// Times the job was held in memory.
    public private(set) var holds = 0

    /// `seenBefore`: the broker redelivered the job, or it came back from a retry or throttle queue
    /// (only then can the ledger already hold its outcome). `throttled`: the job has throttles to pass.
    public init(expiresAt: Date, seenBefore: Bool, throttled: Bool, settings: Settings) {
        self.expiresAt = expiresAt
        self.seenBefore = seenBefore
        self.throttled = throttled
        self.settings = settings
    }

    /// The first action for a delivery.
    public mutating func start(now: Date) -> Action {
        precondition(state == .received, "start(now:) twice")
        if now >= expiresAt {
            return finish(
                Record(status: .expired, reason: "expired before it could be sent"), .ack, .expired,
                Note(.notice, "job expired before sending; dropped"))
        }
        if seenBefore {
            state = .readingStatus
            return .readStatus
        }
        return afterStatus()
    }

    /// The ledger's status for the job (nil: no row, or the store could not say).
    public mutating func statusRead(_ status: DeliveryStatus?) -> Action {
        precondition(state == .readingStatus, "statusRead in \(state)")
        if let status, status.isFinal { return duplicate(of: status) }
        return afterStatus()
    }

    private mutating func afterStatus() -> Action {
        guard throttled else {
            state = .claiming
            return .claim
        }
        state = .throttling
        return .checkThrottles
    }

    /// What the throttles answered at `now`.
    public mutating func throttleChecked(_ throttle: Throttle, now: Date) -> Action {
        precondition(state == .throttling, "throttleChecked in \(state)")
        switch throttle {
        case .allowed, .unavailable:
            state = .claiming
            return .claim
        case .wouldExpire(let limit):
            return expiredWhileThrottled(limit)
        case .refused(let limit, let retryAfter):
            if now.adding(retryAfter) >= expiresAt { return expiredWhileThrottled(limit) }
            if retryAfter <= settings.holdLimit {
                state = .holding
                holds += 1
                return .hold(retryAfter)
            }
            let delay = Self.parkingDelay(for: retryAfter, in: settings.throttleDelays, holdLimit: settings.holdLimit)
            // The queue that waits long enough would outlast the code: holding still sends it in time.
            if now.adding(delay) >= expiresAt {
                state = .holding
                holds += 1
                return .hold(retryAfter)
            }
            return finish(
                Record(status: .throttled, reason: nil, detail: "\(limit): parked for \(DurationText.format(delay))"), .park(delay: delay),
                .throttled,
                Note(.debug, "throttled; parked", ["limit": limit, "delay": DurationText.format(delay)]))
        }
    }

    /// The throttle queue for a wait too long to hold: the longest queue that leaves at most
    /// `holdLimit` to hold when the job comes back (so it is not late), else the shortest that waits
    /// long enough (or the longest there is; the job then comes back early and waits again).
    public static func parkingDelay(for wait: Duration, in delays: [Duration], holdLimit: Duration) -> Duration {
        if let fitting = delays.last(where: { $0 <= wait && wait - $0 <= holdLimit }) { return fitting }
        return RetryPolicy.queueDelay(for: wait, in: delays)
    }

    private mutating func expiredWhileThrottled(_ limit: String) -> Action {
        finish(
            Record(status: .expired, reason: "throttled (\(limit)) until past expiresAt"), .ack, .expired,
            Note(.notice, "throttled job would expire before its turn; dropped", ["limit": limit]))
    }

    /// A hold ended.
    public mutating func held(now: Date) -> Action {
        precondition(state == .holding, "held in \(state)")
        if now >= expiresAt {
            return finish(
                Record(status: .expired, reason: "expired while throttled"), .ack, .expired,
                Note(.notice, "throttled job would expire before its turn; dropped"))
        }
        state = .throttling
        return .checkThrottles
    }

    /// The ledger's answer to the claim.
    public mutating func claimed(_ claim: DeliveryClaim) -> Action {
        precondition(state == .claiming, "claimed in \(state)")
        switch claim {
        case .claimed(let attempt):
            state = .delivering(attempt: attempt)
            return .deliver(attempt: attempt)
        case .finished(let status):
            return duplicate(of: status)
        case .inDoubt(let owner):
            return finish(
                Record(status: .uncertain, reason: "an earlier attempt by \(owner) may have reached the provider"), .ack, .uncertain,
                Note(.warning, "job in doubt (an earlier attempt may have been sent); not resending", ["previous.owner": owner]))
        case .unknown, .mismatch:
            // Signed, yet not what the API recorded: never send it.
            let why = if case .mismatch(let field) = claim { "the ledger's \(field) differs from the job's" } else { "no ledger row for this job id" }
            return finish(
                nil, .deadLetter(reason: "unauthenticated: \(why)", attempt: 0), .unauthenticated,
                Note(.error, "job does not match the ledger; dead-lettered", ["problem": why]))
        }
    }

    /// The store could not be asked for the claim: hand the job back and try later.
    public mutating func claimFailed(_ error: String) -> Action {
        precondition(state == .claiming, "claimFailed in \(state)")
        return finish(
            nil, .requeue(after: .seconds(1)), .storeError, Note(.error, "cannot claim job in the store; requeueing", ["error": error]))
    }

    /// The provider's answer at `now` (`segments`: how the SMS was encoded). `provider` names the one
    /// that answered, for the ledger's history; `failover` is the provider an attempt made now would
    /// go to after a provider failure (nil: none other may be called now, so it waits like a retry).
    public mutating func delivered(
        _ outcome: DeliveryOutcome, segments: SMSSegments? = nil, now: Date, provider: String? = nil, failover: String? = nil
    ) -> Action {
        guard case .delivering(let attempt) = state else { preconditionFailure("delivered in \(state)") }
        var outcome = outcome
        if case .uncertain(let reason, let code) = outcome, settings.retryUncertain {
            outcome = .retryable(reason: reason, retryAfter: nil, code: code)
        }
        let at = provider.map { " at \($0)" } ?? ""
        switch outcome {
        case .sent(let reference):
            return finish(
                Record(status: .sent, reason: nil, segments: segments, providerMessageID: reference, detail: reference.map { "provider id \($0)" }),
                .ack, .sent, Note(.info, "sent", ["attempt": String(attempt)]))
        case .uncertain(let reason, _):
            return finish(
                Record(status: .uncertain, reason: reason), .ack, .uncertain, Note(.warning, "outcome unknown; not resending", ["reason": reason]))
        case .permanent(let reason, _):
            return finish(
                Record(status: .failed, reason: reason), .deadLetter(reason: reason, attempt: attempt), .failed,
                Note(.warning, "permanent failure; dead-lettered", ["reason": reason, "attempt": String(attempt)]))
        case .blocked(let reason, _):
            return finish(
                Record(status: .failed, reason: reason, detail: "fraud block\(at): \(reason); not sent elsewhere"),
                .deadLetter(reason: reason, attempt: attempt), .failed,
                Note(.warning, "destination blocked by the provider's fraud defence; dead-lettered", ["reason": reason, "attempt": String(attempt)]))
        case .providerFailure(let reason, let code):
            if let failover, let provider,
                case .retry = settings.retryPolicy.decide(failures: attempt, retryAfter: nil, now: now, expiresAt: expiresAt)
            {
                state = .failingOver
                return .failOver(
                    Record(status: .retrying, reason: reason, detail: "attempt \(attempt) \(provider) \(code ?? "failed"), next \(failover)"))
            }
            return retryOrGiveUp(attempt: attempt, reason: reason, retryAfter: nil, at: at, now: now)
        case .retryable(let reason, let retryAfter, _):
            return retryOrGiveUp(attempt: attempt, reason: reason, retryAfter: retryAfter, at: at, now: now)
        }
    }

    /// The failover's record is written: on to the throttles, which choose the next provider.
    public mutating func failedOver(now: Date) -> Action {
        precondition(state == .failingOver, "failedOver in \(state)")
        if now >= expiresAt {
            return finish(
                Record(status: .expired, reason: "expired before another provider could take it"), .ack, .expired,
                Note(.notice, "job expired while failing over; dropped"))
        }
        return afterStatus()
    }

    private mutating func retryOrGiveUp(attempt: Int, reason: String, retryAfter: Duration?, at: String, now: Date) -> Action {
        switch settings.retryPolicy.decide(failures: attempt, retryAfter: retryAfter, now: now, expiresAt: expiresAt) {
        case .retry(let delay):
            // When it really runs: the delay queue's wait, or the destination's spacing if longer.
            var why = "backoff \(DurationText.format(delay))"
            if settings.perNumberSpacing > .zero { why += ", per-number spacing \(DurationText.format(settings.perNumberSpacing))" }
            let runs = now.addingTimeInterval(max(delay, settings.perNumberSpacing).seconds)
            return finish(
                Record(
                    status: .retrying, reason: reason,
                    detail: "attempt \(attempt)\(at) failed: \(reason); retry at \(Timestamp.timeOfDay(runs)) (\(why))"),
                .retry(delay: delay, attempt: attempt), .retry,
                Note(
                    .notice, "retryable failure; retrying later",
                    ["reason": reason, "attempt": String(attempt), "delay": DurationText.format(delay)]))
        case .giveUp(.wouldExpire):
            return finish(
                Record(status: .expired, reason: "\(reason); the next attempt would be after expiresAt"), .ack, .expired,
                Note(.notice, "retryable failure but the code would expire first; dropped", ["reason": reason]))
        case .giveUp(.exhausted):
            let why = "retries exhausted after \(attempt) attempts; last: \(reason)"
            return finish(
                Record(status: .dead, reason: why), .deadLetter(reason: why, attempt: attempt), .failed,
                Note(.warning, "retries exhausted; dead-lettered", ["reason": reason]))
        }
    }

    private mutating func duplicate(of status: DeliveryStatus) -> Action {
        state = .finished
        return .finish(
            Finish(
                record: nil, duplicateOf: status, settlement: .ack, outcome: .duplicate,
                note: Note(.info, "job already handled; skipped", ["status": status.rawValue])))
    }

    private mutating func finish(_ record: Record?, _ settlement: Settlement, _ outcome: JobOutcome, _ note: Note) -> Action {
        state = .finished
        return .finish(Finish(record: record, settlement: settlement, outcome: outcome, note: note))
    }

    /// What happens when the republish a settlement needs (retry, park, dead letter) is not confirmed.
    public static func republishFailed(_ settlement: Settlement) -> (requeue: Bool, outcome: JobOutcome) {
        switch settlement {
        // The broker dead-letters a rejected delivery itself (reason `rejected`).
        case .deadLetter: (false, .rejected)
        case .retry, .park, .requeue, .ack: (true, .requeued)
        }
    }
}
