import Foundation
import HeraldCore
import Logging
import Metrics
import Synchronization

/// Carries out `LimitLeases` for herald-api's sends: which of a send's limits a leased token covers,
/// and the leases and refunds it asks of the store, in tasks of their own so that no send waits for one.
final class LeasedLimits: Sendable {
    /// One send's limits: which a leased token covers; the others go to the store's admission.
    struct Coverage {
        /// Bit `i` set: the send's limit `i` is covered (a bit set rather than an array: no allocation per send).
        var covered: UInt64
        /// The limits the store decides, in the send's order.
        var storeChecks: [LimitCheck]

        func isCovered(_ index: Int) -> Bool { covered & (1 << UInt64(index)) != 0 }

        /// The position in the send's limits of `storeChecks[storeIndex]`.
        func checkIndex(_ storeIndex: Int) -> Int {
            var seen = -1
            var index = 0
            while true {
                if isCovered(index) == false {
                    seen += 1
                    if seen == storeIndex { return index }
                }
                index += 1
            }
        }
    }

    private let state: Mutex<LimitLeases>
    private let store: any RateLimitStore
    private let clock: any WallClock
    private let logger: Logger
    private let enabled: Bool
    private let granted = Counter(label: "herald_api_limit_leases_total", dimensions: [("outcome", "granted")])
    private let refused = Counter(label: "herald_api_limit_leases_total", dimensions: [("outcome", "refused")])
    private let failed = Counter(label: "herald_api_limit_leases_total", dimensions: [("outcome", "failed")])
    private let returned = Counter(label: "herald_api_limit_lease_tokens_returned_total")

    init(store: any RateLimitStore, settings: LimitLeases.Settings, clock: any WallClock, logger: Logger) {
        self.state = Mutex(LimitLeases(settings: settings))
        self.store = store
        self.clock = clock
        self.logger = logger
        self.enabled = settings.above > 0
    }

    /// Spends leased tokens for the limits they cover and starts the leases that are due.
    func cover(_ checks: [LimitCheck], now: Date) -> Coverage {
        guard enabled, checks.count <= 64 else { return Coverage(covered: 0, storeChecks: checks) }
        let time = now.microsecondsSince1970
        var covered: UInt64 = 0
        var leases: [LimitLeases.Lease] = []
        let refunds = state.withLock { state in
            for (index, check) in checks.enumerated() {
                let (isCovered, lease) = state.cover(key: check.key, parameters: GCRA.Parameters(check.policy), now: time)
                if isCovered { covered |= 1 << UInt64(index) }
                if let lease { leases.append(lease) }
            }
            return state.sweep(now: time)
        }
        for lease in leases { Task { await self.ask(lease) } }
        if refunds.isEmpty == false { Task { await self.refund(refunds) } }
        guard covered != 0 else { return Coverage(covered: 0, storeChecks: checks) }
        var storeChecks: [LimitCheck] = []
        storeChecks.reserveCapacity(checks.count - covered.nonzeroBitCount)
        for (index, check) in checks.enumerated() where covered & (1 << UInt64(index)) == 0 { storeChecks.append(check) }
        return Coverage(covered: covered, storeChecks: storeChecks)
    }

    /// The send did not go out: the tokens that covered it are held again (or go back to the store).
    func giveBack(_ checks: [LimitCheck], _ coverage: Coverage, now: Date) {
        guard coverage.covered != 0 else { return }
        let time = now.microsecondsSince1970
        let refunds = state.withLock { state in
            checks.indices.compactMap { coverage.isCovered($0) ? state.giveBack(key: checks[$0].key, now: time) : nil }
        }
        if refunds.isEmpty == false { Task { await self.refund(refunds) } }
    }

    private func ask(_ lease: LimitLeases.Lease) async {
        do {
            let decision = try await store.rateDecision(key: lease.key, parameters: lease.storeParameters, now: lease.at)
            (decision.allowed ? granted : refused).increment()
            let refund = state.withLock {
                $0.leased(lease, granted: decision.allowed, retryAfter: decision.retryAfter, now: clock.now.microsecondsSince1970)
            }
            if let refund { await self.refund([refund]) }
        } catch {
            failed.increment()
            _ = state.withLock { $0.leased(lease, granted: false, retryAfter: 0, now: clock.now.microsecondsSince1970) }
            logger.warning(
                "a limit lease failed; sends under the key ask the store for a while", metadata: ["error": .string("\(error)")])
        }
    }

    /// Gives lapsed or returned tokens back to the store.
    private func refund(_ refunds: [LimitLeases.Refund]) async {
        let now = clock.now.microsecondsSince1970
        for refund in refunds {
            do {
                try await store.rateRefund(key: refund.key, parameters: refund.storeParameters, now: now)
                returned.increment(by: Int64(refund.count))
            } catch {
                // Unspent tokens not given back only leave the allowance smaller until their time passes.
                logger.warning("lapsed limit tokens could not be given back", metadata: ["error": .string("\(error)")])
            }
        }
    }
}
