import Foundation

/// Which provider of a destination's chain the next attempt of a job goes to, from the chain, each
/// provider's breaker and what the job's earlier attempts met. Pure: the breakers' permissions and the
/// attempts come in, a provider or a wait goes out.
///
/// - A provider whose breaker lets calls through (closed, or a half-open probe) is eligible; an open one
///   is skipped.
/// - After a retry-later answer (a concurrency limit, an explicit Retry-After) the same provider is
///   asked again, unless its breaker opened meanwhile.
/// - After a provider failure the next eligible provider after it in the chain is chosen, wrapping
///   round to the start once every later one has been passed.
/// - When none is eligible the job waits for the earliest provider to come back (nil: every one is
///   held open by an operator).
///
/// Answers about the number itself (invalid, fraud block) and uncertain attempts never reach here:
/// they end the job.
public enum RouteChoice {
    /// What an earlier attempt met at its provider.
    public enum Met: Sendable, Equatable {
        case providerFailure
        case retryLater
    }

    public struct Attempt: Sendable, Equatable {
        public var provider: String
        public var met: Met

        public init(provider: String, met: Met) {
            self.provider = provider
            self.met = met
        }
    }

    public enum Decision: Sendable, Equatable {
        case send(provider: String)
        /// No provider of the chain may be called before `until` (nil: not until an operator closes one).
        case wait(until: Date?)
        /// The destination has no route.
        case noRoute
    }

    public static func next(chain: [String], permissions: [String: CircuitBreaker.Permission], attempts: [Attempt]) -> Decision {
        guard chain.isEmpty == false else { return .noRoute }
        func eligible(_ provider: String) -> Bool {
            switch permissions[provider] ?? .call {
            case .call, .probe: true
            case .refused: false
            }
        }
        var start = 0
        if let last = attempts.last, let index = chain.firstIndex(of: last.provider) {
            switch last.met {
            case .retryLater:
                if eligible(last.provider) { return .send(provider: last.provider) }
                start = index + 1
            case .providerFailure:
                start = index + 1
            }
        }
        for offset in 0..<chain.count {
            let provider = chain[(start + offset) % chain.count]
            if eligible(provider) { return .send(provider: provider) }
        }
        // Every one refused: the earliest comeback, if any is timed.
        let comebacks = chain.compactMap { provider -> Date? in
            if case .refused(let until) = permissions[provider] ?? .call { until } else { nil }
        }
        return .wait(until: comebacks.min())
    }
}
