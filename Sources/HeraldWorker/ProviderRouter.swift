import Foundation
import HeraldCore
import Synchronization

/// Picks the provider of a job's next attempt, live: `RouteChoice` over the job's chain, each
/// provider's breaker (`ProviderBreakers`) and the calls this process has open at each. Then holds
/// one of the provider's call slots for the call itself, so that no more than `maxInFlight` requests
/// are open at one account from this process.
final class ProviderRouter: Sendable {
    let breakers: ProviderBreakers?
    private let capacity: [String: Int]
    private let open = Mutex<[String: Int]>([:])
    /// How soon a job finding every provider of its chain full asks again.
    static let fullRetry: Duration = .milliseconds(20)
    /// How often a job whose whole chain an operator holds open asks again.
    static let heldRetry: Duration = .seconds(5)

    init(providers: [ProviderSlot], breakers: ProviderBreakers?) {
        self.breakers = breakers
        var capacity: [String: Int] = [:]
        for provider in providers { if let limit = provider.maxInFlight { capacity[provider.name] = limit } }
        self.capacity = capacity
    }

    /// What a job may do now. A half-open provider is chosen only once the store admitted this job as
    /// one of its probes; when it did not, the choice is made again without it.
    func choose(chain: [String], attempts: [RouteChoice.Attempt], now: Date) async -> RouteChoice.Decision {
        // One provider with neither breaker nor capacity (the single gateway, email, push): nothing to
        // choose, and every job of such a worker passes here.
        if chain.count == 1, breakers?.peek(chain[0], now: now) == nil, capacity[chain[0]] == nil { return .send(provider: chain[0]) }
        var probesRefused: Set<String> = []
        while true {
            var permissions: [String: CircuitBreaker.Permission] = [:]
            let open = self.open.withLock { $0 }
            for provider in chain {
                if probesRefused.contains(provider) {
                    permissions[provider] = .refused(until: now.addingTimeInterval(1))
                } else if let limit = capacity[provider], open[provider, default: 0] >= limit {
                    permissions[provider] = .refused(until: now.adding(Self.fullRetry))
                } else {
                    permissions[provider] = breakers?.peek(provider, now: now) ?? .call
                }
            }
            let decision = RouteChoice.next(chain: chain, permissions: permissions, attempts: attempts)
            guard case .send(let provider) = decision, permissions[provider] == .probe, let breakers else { return decision }
            if await breakers.admitProbe(provider, now: now) { return decision }
            probesRefused.insert(provider)
        }
    }

    /// The provider an attempt made now would go to after `provider` failed, for an immediate
    /// failover: one this delivery has not `tried` yet (going straight back to one that just failed
    /// would only hammer it; the job then waits for its backoff). No probe is admitted by asking.
    func failover(after provider: String, chain: [String], attempts: [RouteChoice.Attempt], tried: Set<String>, now: Date) -> String? {
        var permissions: [String: CircuitBreaker.Permission] = [:]
        for name in chain { permissions[name] = tried.contains(name) ? .refused(until: nil) : breakers?.peek(name, now: now) ?? .call }
        guard case .send(let next) = RouteChoice.next(chain: chain, permissions: permissions, attempts: attempts) else { return nil }
        return next
    }

    /// Marks a call to `provider` open; pair with `finished`.
    func started(_ provider: String) { open.withLock { $0[provider, default: 0] += 1 } }

    func finished(_ provider: String) { open.withLock { $0[provider, default: 1] -= 1 } }

    /// Records the call's outcome in the provider's breaker.
    func record(_ provider: String, _ outcome: DeliveryOutcome, now: Date) {
        breakers?.record(provider, failed: outcome.isProviderFault, now: now)
    }
}
