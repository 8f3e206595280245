import Foundation
import HeraldCore
import Logging
import Metrics
import Synchronization

/// This worker's copy of every provider's circuit breaker, kept in step with the one in the store
/// that all sms workers share.
///
/// Asking whether a provider may be called reads the copy (no store round trip per SMS). Call outcomes
/// are applied to the copy at once and queued; `sync` writes the queue into the stored breaker (a
/// version-checked replace, so workers writing at once each land) and adopts what the store then
/// holds, which carries the other workers' outcomes and an operator's override. A failure asks for a
/// sync straight away, so a provider that stopped answering opens for everyone within one store write
/// rather than one sync period. Admitting a half-open probe goes through the store, so every worker
/// together lets exactly `probes` through. The worker whose write makes a transition logs and counts
/// it, once.
final class ProviderBreakers: Sendable {
    private struct Entry {
        var breaker: CircuitBreaker
        /// Outcomes applied here and not yet written to the store, oldest first.
        var pending: [(failed: Bool, at: Date)] = []
    }

    let store: any BreakerStore
    let clock: any WallClock
    let logger: Logger
    /// How often the copy is refreshed from the store when nothing asks sooner.
    let period: Duration
    private let entries: Mutex<[String: Entry]>
    private let settings: [String: CircuitBreaker.Settings]
    private let wake = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let wanted = Mutex(false)

    init(providers: [ProviderSlot], store: any BreakerStore, clock: any WallClock, logger: Logger, period: Duration = .milliseconds(250)) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.period = period
        var settings: [String: CircuitBreaker.Settings] = [:]
        var entries: [String: Entry] = [:]
        for provider in providers {
            guard let breaker = provider.breaker else { continue }
            settings[provider.name] = breaker
            entries[provider.name] = Entry(breaker: CircuitBreaker(settings: breaker, now: clock.now))
            Gauge(label: "herald_sms_provider_state", dimensions: [("provider", provider.name)]).record(0)
        }
        self.settings = settings
        self.entries = Mutex(entries)
    }

    /// The providers that have a breaker.
    var names: [String] { settings.keys.sorted() }

    /// What the copy says of calling `provider` now, without admitting a probe (nil: it has no breaker).
    func peek(_ provider: String, now: Date) -> CircuitBreaker.Permission? {
        entries.withLock { $0[provider]?.breaker.peek(now: now) }
    }

    /// Admits one half-open probe through the store; false when the probes are all given out (or the
    /// store cannot be asked, when the provider is left alone until it can).
    func admitProbe(_ provider: String, now: Date) async -> Bool {
        guard let settings = settings[provider] else { return true }
        await flush(provider)
        do {
            let (permission, breaker) = try await store.updateBreaker(provider: provider, settings: settings, now: now) { breaker in
                let (permission, transition) = breaker.permission(now: now)
                return (permission, transition)
            }
            if let transition = permission.1 { announce(provider, transition) }
            adopt(provider, breaker)
            return permission.0 == .probe || permission.0 == .call
        } catch {
            logger.error(
                "cannot admit a probe for the provider (store error)", metadata: ["provider": .string(provider), "error": .string("\(error)")])
            return false
        }
    }

    /// A call's outcome (`failed`: it counts against the provider).
    func record(_ provider: String, failed: Bool, now: Date) {
        let known = entries.withLock { entries -> Bool in
            guard entries[provider] != nil else { return false }
            entries[provider]!.breaker.record(failed: failed, now: now)
            entries[provider]!.pending.append((failed, now))
            return true
        }
        if known, failed { requestSync() }
    }

    /// Refreshes every copy from the store, writing queued outcomes first; until cancelled.
    func run() async {
        while Task.isCancelled == false {
            await sync()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = wanted.withLock { wanted in
                        defer { wanted = false }
                        return wanted
                    }
                    if now {
                        continuation.resume()
                        return
                    }
                    wake.withLock { $0 = continuation }
                    let period = self.period
                    Task {
                        try? await Task.sleep(for: period)
                        self.wake.withLock { $0.take() }?.resume()
                    }
                }
            } onCancel: {
                self.wake.withLock { $0.take() }?.resume()
            }
        }
        await sync()
    }

    /// One round: every provider's queued outcomes written, its copy replaced by the store's.
    func sync() async {
        for provider in names { await flush(provider) }
    }

    private func requestSync() {
        if let continuation = wake.withLock({ $0.take() }) {
            continuation.resume()
        } else {
            wanted.withLock { $0 = true }
        }
    }

    private func flush(_ provider: String) async {
        guard let settings = settings[provider] else { return }
        let pending = entries.withLock { entries in
            defer { entries[provider]?.pending = [] }
            return entries[provider]?.pending ?? []
        }
        let now = clock.now
        do {
            let (transitions, breaker) = try await store.updateBreaker(provider: provider, settings: settings, now: now) { breaker in
                pending.compactMap { breaker.record(failed: $0.failed, now: $0.at) }
            }
            for transition in transitions { announce(provider, transition) }
            adopt(provider, breaker)
        } catch {
            // Kept for the next round; the copy goes on deciding meanwhile.
            entries.withLock { $0[provider]?.pending.insert(contentsOf: pending, at: 0) }
            logger.error(
                "cannot share the provider's breaker (store error)", metadata: ["provider": .string(provider), "error": .string("\(error)")])
        }
    }

    /// The store's breaker, with the outcomes recorded here since the write re-applied on top.
    private func adopt(_ provider: String, _ stored: CircuitBreaker) {
        let state = entries.withLock { entries -> CircuitBreaker.State? in
            guard var entry = entries[provider] else { return nil }
            var breaker = stored
            for outcome in entry.pending { breaker.record(failed: outcome.failed, now: outcome.at) }
            entry.breaker = breaker
            entries[provider] = entry
            return breaker.state
        }
        if let state { Gauge(label: "herald_sms_provider_state", dimensions: [("provider", provider)]).record(state.gauge) }
    }

    private func announce(_ provider: String, _ transition: CircuitBreaker.Transition) {
        Counter(label: "herald_sms_provider_transitions_total", dimensions: [("provider", provider), ("to", transition.to.label)]).increment()
        let level: Logger.Level = transition.to.gauge == 2 ? .warning : .notice
        logger.log(
            level: level, "provider breaker \(transition.to.label)",
            metadata: ["provider": .string(provider), "from": .string(transition.from.label), "reason": .string(transition.reason)])
    }
}
