import Foundation

/// Applies a list of limits all-or-nothing: checks run in order, each one atomic in the shared store;
/// when one refuses, the events already spent by earlier checks are given back, so a refused request
/// costs nothing.
public struct RateLimiter: Sendable {
    /// The first limit that refused, and when the request could pass.
    public struct Refusal: Sendable, Equatable {
        public var check: LimitCheck
        public var retryAfter: Duration
    }

    let store: any RateLimitStore

    public init(store: any RateLimitStore) {
        self.store = store
    }

    /// nil when every check allowed the request (and spent one event each).
    public func admit(_ checks: [LimitCheck], now: Date) async throws -> Refusal? {
        let micros = now.microsecondsSince1970
        var spent: [LimitCheck] = []
        for check in checks {
            let decision = try await store.rateDecision(key: check.key, parameters: GCRA.Parameters(check.policy), now: micros)
            if decision.allowed {
                spent.append(check)
                continue
            }
            try await refund(spent, now: now)
            return Refusal(check: check, retryAfter: decision.retryAfterDuration)
        }
        return nil
    }

    /// Gives back one event of each check.
    public func refund(_ checks: [LimitCheck], now: Date) async throws {
        for check in checks {
            try await store.rateRefund(key: check.key, parameters: GCRA.Parameters(check.policy), now: now.microsecondsSince1970)
        }
    }
}
