import Foundation

/// When to try a failed send again, as a value: a fixed ladder of delays (one delay queue each),
/// stretched to honour a provider's `Retry-After`, and never past the job's `expiresAt`.
public struct RetryPolicy: Sendable, Equatable {
    /// The delay queues, shortest first (`workers.sms.retryDelays`).
    public let delays: [Duration]

    /// What to do with a job after a retryable failure.
    public enum Decision: Sendable, Equatable {
        /// Republish through the delay queue for `delay`.
        case retry(delay: Duration)
        /// Stop: the reason goes to the ledger (and the dead-letter queue when retries ran out).
        case giveUp(Reason)
    }

    /// Why retrying stops.
    public enum Reason: String, Sendable, Equatable {
        /// The next try would land after `expiresAt`; the code would be dead on arrival.
        case wouldExpire = "expired"
        /// Every delay of the ladder was used.
        case exhausted = "retries exhausted"
    }

    public init(delays: [Duration]) {
        self.delays = delays.sorted()
    }

    /// Each delay queue has one fixed TTL, so a wait rounds up to the first queue that waits long
    /// enough (or the longest one).
    public static func queueDelay(for wanted: Duration, in delays: [Duration]) -> Duration {
        delays.first { $0 >= wanted } ?? delays[delays.count - 1]
    }

    /// Decides after the `failures`-th failed try (1 for the first failure).
    public func decide(failures: Int, retryAfter: Duration?, now: Date, expiresAt: Date) -> Decision {
        guard failures >= 1, failures <= delays.count else { return .giveUp(.exhausted) }
        let wanted = max(delays[failures - 1], retryAfter ?? .zero)
        let delay = Self.queueDelay(for: wanted, in: delays)
        guard now.adding(max(delay, wanted)) < expiresAt else { return .giveUp(.wouldExpire) }
        return .retry(delay: delay)
    }
}
