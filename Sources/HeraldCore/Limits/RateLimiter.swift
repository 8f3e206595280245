import Foundation

/// Applies a list of limits all-or-nothing in one store transaction: checks run in order, each one
/// atomic decision; when one refuses, the events already spent by earlier checks are given back before
/// anyone else can see them, so a refused request costs nothing.
public struct RateLimiter: Sendable {
    /// The first limit that refused, and when the request could pass.
    public struct Refusal: Sendable, Equatable {
        public var check: LimitCheck
        public var retryAfter: Duration

        public init(check: LimitCheck, retryAfter: Duration) {
            self.check = check
            self.retryAfter = retryAfter
        }
    }

    let store: any RateLimitStore

    public init(store: any RateLimitStore) {
        self.store = store
    }

    /// nil when every check allowed the request (and spent one event each).
    public func admit(_ checks: [LimitCheck], now: Date) async throws -> Refusal? {
        guard checks.isEmpty == false else { return nil }
        let entries = checks.map { (key: $0.key, parameters: GCRA.Parameters($0.policy)) }
        guard let refused = try await store.rateDecisions(entries, now: now.microsecondsSince1970) else { return nil }
        return Refusal(check: checks[refused.index], retryAfter: refused.decision.retryAfterDuration)
    }

    /// Gives back one event of each check.
    public func refund(_ checks: [LimitCheck], now: Date) async throws {
        for check in checks {
            try await store.rateRefund(key: check.key, parameters: GCRA.Parameters(check.policy), now: now.microsecondsSince1970)
        }
    }
}
