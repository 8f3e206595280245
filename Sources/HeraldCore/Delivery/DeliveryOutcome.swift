/// What a provider's answer means for a job. Every channel maps its provider's replies to one of these.
///
/// `code` is the provider error as a short stable label for `herald_worker_provider_errors_total`
/// (`http_503`, `unreachable`, `no_answer`, `smtp_550`, an APNs reason such as `BadDeviceToken`); nil
/// when the failure is Herald's own (a template that does not render, a seal that does not open).
public enum DeliveryOutcome: Sendable, Equatable {
    /// Accepted by the provider (`reference` is its message id, when it gave one).
    case sent(reference: String?)
    /// Not accepted, but nothing was sent and trying later at the same provider may work (a limit on
    /// concurrent requests, an explicit Retry-After).
    case retryable(reason: String, retryAfter: Duration?, code: String? = nil)
    /// The provider itself failed and nothing was sent (5xx, unreachable, bad credentials, a suspended
    /// account): the next attempt goes to the next provider of the route, and the provider's breaker
    /// counts it. With no other provider it is retried like `retryable`.
    case providerFailure(reason: String, code: String? = nil)
    /// Will never work for this message (invalid or barred number, landline, unsubscribed, malformed
    /// request): dead-letter it; no other provider is tried.
    case permanent(reason: String, code: String? = nil)
    /// The provider's fraud defence refused the destination (SMS pumping): final like `permanent`,
    /// and never routed round through another provider, which would defeat the block.
    case blocked(reason: String, code: String? = nil)
    /// The request may have reached the provider (timeout after sending): resending risks a duplicate.
    case uncertain(reason: String, code: String? = nil)

    /// The provider error label, when the provider (or the way to it) failed.
    public var errorCode: String? {
        switch self {
        case .sent: nil
        case .retryable(_, _, let code), .providerFailure(_, let code), .permanent(_, let code), .blocked(_, let code), .uncertain(_, let code):
            code
        }
    }

    /// Whether it counts against the provider's breaker: a provider failure, or a request that left
    /// and got no answer (a provider that times out is as sick as one that answers 503). Answers about
    /// the number and limits on concurrency are the provider working.
    public var isProviderFault: Bool {
        switch self {
        case .providerFailure, .uncertain: true
        case .sent, .retryable, .permanent, .blocked: false
        }
    }
}

/// Where a job stands in the delivery ledger (the idempotency record, keyed by job id).
public enum DeliveryStatus: String, Sendable, CaseIterable {
    /// Recorded by the API before publishing; no worker has it yet.
    case pending
    /// A worker claimed it and is talking to the provider.
    case sending
    /// A send failed transiently and the job waits in a delay queue.
    case retrying
    /// A throttle (per-number spacing, a limit) parked the job in a throttle queue; claimable like
    /// pending when it comes back.
    case throttled
    /// The provider accepted it.
    case sent
    /// The provider's receipt: it reached the handset.
    case delivered
    /// The provider's receipt: it did not reach the handset (the reason carries the provider's code).
    case undelivered
    /// Permanently refused by the provider; the job is in the dead-letter queue.
    case failed
    /// Dead-lettered by the worker after its retries ran out.
    case dead
    /// Dropped because it passed `expiresAt` before it could be sent.
    case expired
    /// A send may or may not have happened (worker died or timed out mid-request); not resent.
    case uncertain
    /// The API could not get the broker to confirm it; the client was told so.
    case abandoned

    /// True when nothing more will happen to the job.
    public var isFinal: Bool {
        switch self {
        case .pending, .sending, .retrying, .throttled: false
        case .sent, .delivered, .undelivered, .failed, .dead, .expired, .uncertain, .abandoned: true
        }
    }
}

/// The answer of the ledger when a worker tries to claim a job before sending.
public enum DeliveryClaim: Sendable, Equatable {
    /// The worker owns the send now; `attempt` counts sends tried so far, this one included.
    case claimed(attempt: Int)
    /// Someone already claimed it and never recorded an outcome (a crash or a lost connection).
    case inDoubt(owner: String)
    /// The job already reached a final status; acknowledge and move on.
    case finished(DeliveryStatus)
    /// The ledger has no row for this job id: herald-api never issued it. Dead-letter, never send.
    case unknown
    /// The ledger's row is for another project, type or destination than the job says: the job was
    /// altered or re-addressed. Dead-letter, never send.
    case mismatch(field: String)
}

/// One delivery attempt as a handler reports it: the outcome, and for SMS how the text was encoded
/// (providers bill per segment, so workers record it per message and sum it per country).
public struct DeliveryReport: Sendable, Equatable {
    public var outcome: DeliveryOutcome
    public var segments: SMSSegments?
    /// The job a retry (or dead letter, or in-doubt record) carries instead of the one received, when
    /// the attempt made progress that must not be repeated: an Apple authorization code exchanged for a
    /// refresh token is spent, so the retry revokes the refresh token instead. Same id, project, type
    /// and destination.
    public var continuation: Job?
    /// What the provider said the message cost, when it said (Vonage, Telnyx; Twilio prices later).
    public var price: ProviderPrice?

    public init(_ outcome: DeliveryOutcome, segments: SMSSegments? = nil, continuation: Job? = nil, price: ProviderPrice? = nil) {
        self.outcome = outcome
        self.segments = segments
        self.continuation = continuation
        self.price = price
    }
}

/// A provider's own price for a message, as it wrote it (decimal text, never rounded through a float).
public struct ProviderPrice: Sendable, Equatable, CustomStringConvertible {
    public var amount: String
    /// ISO 4217, as the provider gave it.
    public var currency: String

    public init(amount: String, currency: String) {
        self.amount = amount
        self.currency = currency
    }

    public var description: String { "\(amount) \(currency)" }
}
