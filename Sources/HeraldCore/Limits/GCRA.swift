import Foundation

/// The Generic Cell Rate Algorithm: a rate limit kept as one number per key, the theoretical arrival
/// time (TAT) of the next event.
///
/// For a policy `N/period burst B`, events are spaced `T = period / N` apart and may arrive up to
/// `τ = B·T` early, so B events pass at once and then one every T. Over any stretch of length `period`
/// at most `B + N` pass (B after a long idle plus N earned); combine policies (`3/10m`, `10/1d`) to bound
/// both bursts and totals. Times are integer microseconds so the store can keep them exactly; a TAT in
/// the past behaves like no TAT at all, which is why expired keys can be deleted.
public enum GCRA {
    /// Spacing and tolerance of a policy, in microseconds.
    public struct Parameters: Sendable, Hashable {
        /// T: the steady-state spacing between events.
        public let interval: Int64
        /// τ: how far ahead of the steady state a burst may run.
        public let tolerance: Int64

        /// The parameters for `cost` events at once (a lease of several sends): spacing times `cost`,
        /// the same tolerance; the store's statement then spends them in one decision.
        public func forCost(_ cost: Int64) -> Parameters {
            Parameters(interval: interval * max(1, cost), tolerance: tolerance)
        }

        init(interval: Int64, tolerance: Int64) {
            self.interval = interval
            self.tolerance = tolerance
        }

        /// A policy's parameters, as it computed them once when it was made (six keys per send read
        /// them; `Duration`'s 128-bit components cost more than the rest of a key's check).
        public init(_ policy: RatePolicy) {
            self = policy.parameters
        }

        init(limit: Int, period: Duration, burst: Int?) {
            interval = max(1, period.microseconds / Int64(limit))
            tolerance = interval * Int64(burst ?? limit)
        }
    }

    /// The outcome of one event.
    public struct Decision: Sendable, Equatable {
        public var allowed: Bool
        /// The TAT to store (unchanged when denied).
        public var tat: Int64
        /// When a denied event could pass; zero when allowed.
        public var retryAfter: Int64

        public init(allowed: Bool, tat: Int64, retryAfter: Int64) {
            self.allowed = allowed
            self.tat = tat
            self.retryAfter = retryAfter
        }

        public var retryAfterDuration: Duration { .microseconds(retryAfter) }
    }

    /// Decides one event of `cost` at `now` given the stored `tat` (nil = never seen).
    ///
    /// Clocks of different processes disagree a little: a caller whose clock is behind sees the stored
    /// TAT further ahead and is slightly stricter; one ahead is slightly more lenient, by the skew.
    public static func decide(tat: Int64?, now: Int64, parameters: Parameters, cost: Int64 = 1) -> Decision {
        let increment = parameters.interval * cost
        let base = max(tat ?? now, now)
        let next = base + increment
        if next - now <= parameters.tolerance {
            return Decision(allowed: true, tat: next, retryAfter: 0)
        }
        return Decision(allowed: false, tat: tat ?? now, retryAfter: next - parameters.tolerance - now)
    }

    /// A reservation at `now`: the TAT to store (always advanced) and the earliest instant the event
    /// conforms, which may be in the future.
    public static func reserve(tat: Int64?, now: Int64, parameters: Parameters) -> (tat: Int64, slot: Int64) {
        let next = max(tat ?? now, now) + parameters.interval
        return (next, max(now, next - parameters.tolerance))
    }

    /// The TAT after giving back one allowed event (when a later check refused the request).
    public static func refund(tat: Int64, now: Int64, parameters: Parameters, cost: Int64 = 1) -> Int64 {
        max(now, tat - parameters.interval * cost)
    }

    /// Events that could pass right now.
    public static func remaining(tat: Int64?, now: Int64, parameters: Parameters) -> Int64 {
        let ahead = max(0, (tat ?? now) - now)
        return max(0, (parameters.tolerance - ahead) / parameters.interval)
    }
}

extension Duration {
    /// The duration in whole microseconds (truncated).
    public var microseconds: Int64 {
        let parts = components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }
}

extension Date {
    /// Microseconds since 1970, the unit of rate-limit state.
    public var microsecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1_000_000).rounded(.down)) }
}
