import Foundation
import HeraldCore
import Logging
import Synchronization

/// Hands a provider's rate (its `rate`, shared by every worker through the store) to this worker's
/// jobs in the order they arrived, holding them in memory meanwhile.
///
/// Republishing each refused job to a throttle queue would bring it back to be refused again (with a
/// rate of 10/s, 200 jobs would make thousands of republishes and arrive out of order). Instead a job
/// takes a ticket when its delivery arrives (delivery order) and waits for its turn; one pump leases slices
/// of the rate from the store (up to a tenth of a second's worth, or the burst, whichever is smaller)
/// and gives them out ticket by ticket; under a steady load a lease also takes tokens for the jobs
/// that arrive while it is out (`leaseWanted`), which take them without waiting. Jobs beyond
/// `prefetch` wait in the broker's queue, unacked work the broker holds for free, so nothing is
/// republished for the provider rate. A job whose turn would only come after it expires is told so and
/// dropped as expired.
final class ProviderPacer: Sendable {
    /// A place in line.
    struct Ticket: Hashable, Sendable {
        let number: UInt64
    }

    private struct Waiter {
        var expiresAt: Date
        var continuation: CheckedContinuation<JobLifecycle.Throttle, Never>?
        /// A token reached this ticket before it asked (it was still being checked): `wait` returns at once.
        var granted = false
    }

    private struct State {
        var next: UInt64 = 0
        /// Tickets in arrival order; a ticket without a waiter entry is not yet waiting.
        var line: [UInt64] = []
        var waiters: [UInt64: Waiter] = [:]
        /// Leased tokens not given to anyone yet (their ticket left the line), and when they were leased:
        /// a token is only good for a moment, or a quiet spell would end in a burst above the rate.
        var spare = 0
        var leasedAt = Date.distantPast
        var pumping = false
        /// Until when leases ask for the waiting jobs' tokens only: a lease with tokens ahead was refused
        /// (the rate is spent), and asking for more than needed would cost a second round trip per lease.
        var exactUntil = Date.distantPast
    }

    let store: any RateLimitStore
    let check: LimitCheck
    let parameters: GCRA.Parameters
    let clock: any WallClock
    let logger: Logger
    /// The most tokens one lease asks for.
    let leaseSize: Int
    private let state = Mutex(State())

    init(store: any RateLimitStore, check: LimitCheck, clock: any WallClock, logger: Logger) {
        self.store = store
        self.check = check
        self.parameters = GCRA.Parameters(check.policy)
        self.clock = clock
        self.logger = logger
        let burst = max(1, Int(parameters.tolerance / parameters.interval))
        self.leaseSize = max(1, min(burst, Int(100_000 / parameters.interval)))
    }

    /// Takes the next place in line; call in delivery order, then `wait` or `leave` exactly once.
    func ticket() -> Ticket {
        state.withLock { state in
            let ticket = Ticket(number: state.next)
            state.next += 1
            state.line.append(ticket.number)
            return ticket
        }
    }

    /// Waits for this ticket's token; `.wouldExpire` when the job's turn has not come by `expiresAt`,
    /// `.unavailable` when the store cannot be asked (the job then goes unthrottled).
    ///
    /// A cancelled wait (the worker's shutdown grace ran out) ends at once as `.unavailable`: the job
    /// then finds its task cancelled before it claims and goes back to the queue unsent.
    func wait(_ ticket: Ticket, expiresAt: Date) async -> JobLifecycle.Throttle {
        await withTaskCancellationHandler {
            await waitForTurn(ticket, expiresAt: expiresAt)
        } onCancel: {
            state.withLock { state in
                guard let continuation = state.waiters[ticket.number]?.continuation else { return }
                state.waiters[ticket.number] = nil
                state.line.removeAll { $0 == ticket.number }
                continuation.resume(returning: .unavailable)
            }
        }
    }

    private func waitForTurn(_ ticket: Ticket, expiresAt: Date) async -> JobLifecycle.Throttle {
        await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool? in
                if state.waiters[ticket.number]?.granted == true {
                    state.waiters[ticket.number] = nil
                    return nil
                }
                if Task.isCancelled { return nil }
                state.waiters[ticket.number] = Waiter(expiresAt: expiresAt, continuation: continuation)
                if state.spare > 0 {
                    // Tokens leased ahead: handed out here, without waiting for a turn of the pump.
                    lapseSpare(&state, now: clock.now)
                    handOut(&state)
                    if state.waiters[ticket.number] == nil { return false }
                }
                guard state.pumping == false else { return false }
                state.pumping = true
                return true
            }
            switch start {
            case nil: continuation.resume(returning: .allowed)
            case true?: Task { await self.pump() }
            case false?: break
            }
        }
    }

    /// The job left before its turn (dropped, a duplicate, parked for spacing): its place goes to the next.
    func leave(_ ticket: Ticket) {
        state.withLock { state in
            if let index = state.line.firstIndex(of: ticket.number) {
                state.line.remove(at: index)
            } else if state.waiters[ticket.number]?.granted == true {
                // It had a token already: the next in line gets it.
                state.spare += 1
            }
            state.waiters[ticket.number] = nil
        }
    }

    /// Gives tokens out in line order while anyone waits: spare tokens first, then leases from the store.
    private func pump() async {
        while true {
            // Hand out what is leased; stop when nobody at all waits.
            let lease = state.withLock { state -> (wanted: Int, exact: Int)? in
                let now = clock.now
                lapseSpare(&state, now: now)
                expireWaiters(&state, now: now)
                handOut(&state)
                guard state.line.contains(where: { state.waiters[$0]?.continuation != nil }) else {
                    state.pumping = false
                    return nil
                }
                let exact = Self.leaseWanted(waiting: state.line.count, leaseSize: leaseSize, ahead: false)
                return (Self.leaseWanted(waiting: state.line.count, leaseSize: leaseSize, ahead: now >= state.exactUntil), exact)
            }
            guard let (wanted, exact) = lease else { return }
            let decision: GCRA.Decision
            do {
                decision = try await store.rateDecision(
                    key: check.key, parameters: parameters.forCost(Int64(wanted)), now: clock.now.microsecondsSince1970)
            } catch {
                logger.error("provider rate unavailable (store error); sending unthrottled", metadata: ["error": .string("\(error)")])
                state.withLock { state in
                    for number in state.line {
                        if let continuation = state.waiters[number]?.continuation { continuation.resume(returning: .unavailable) }
                        state.waiters[number] = nil
                    }
                    state.line.removeAll()
                    state.pumping = false
                }
                return
            }
            if decision.allowed {
                let now = clock.now
                state.withLock { state in
                    state.spare += wanted
                    state.leasedAt = now
                }
            } else if wanted > exact {
                // The tokens ahead did not fit: ask again at once for the waiting jobs' alone, and lease no
                // more than needed for a second.
                let now = clock.now
                state.withLock { $0.exactUntil = now.addingTimeInterval(1) }
            } else {
                // Sleep until the lease fits, at most a second, so expiring tickets are noticed in time.
                try? await Task.sleep(for: min(.seconds(1), max(.milliseconds(1), decision.retryAfterDuration)))
            }
        }
    }

    /// How many tokens a lease asks for: one per waiting job and, unless the rate refused tokens ahead in
    /// the last second, as many again for the jobs that arrive while it is out (at most `leaseSize` in
    /// all).
    ///
    /// Leasing only for the jobs already waiting made every job wait for a lease of its own: under a
    /// steady load, the jobs that arrive during one store round trip wait for the next, about one and a
    /// half round trips each (4 ms per SMS job in a PostgreSQL drain, a sixth of its time in the
    /// worker). About as many arrive during a lease as waited before it, so leasing twice the waiting
    /// count lets them find a token at once. The extra tokens are the rate's: a quiet spell wastes at
    /// most one lease's worth (spare tokens lapse after a second), never sends above the rate, and
    /// `leaseSize` (at most a tenth of a second of the rate, and never above the burst) bounds the burst
    /// they can make.
    static func leaseWanted(waiting: Int, leaseSize: Int, ahead: Bool) -> Int {
        min(leaseSize, ahead ? waiting * 2 : waiting)
    }

    /// A token is only good for a moment: spare tokens older than a second lapse, or a quiet spell would
    /// end in a burst above the rate.
    private func lapseSpare(_ state: inout State, now: Date) {
        if state.spare > 0, now.timeIntervalSince(state.leasedAt) > 1 { state.spare = 0 }
    }

    /// Tokens to tickets, in line order: a waiting ticket resumes, one still being checked is marked.
    private func handOut(_ state: inout State) {
        while state.spare > 0, let first = state.line.first {
            state.spare -= 1
            state.line.removeFirst()
            if let continuation = state.waiters[first]?.continuation {
                state.waiters[first] = nil
                continuation.resume(returning: .allowed)
            } else {
                state.waiters[first] = Waiter(expiresAt: .distantFuture, continuation: nil, granted: true)
            }
        }
    }

    private func expireWaiters(_ state: inout State, now: Date) {
        state.line.removeAll { number in
            guard let waiter = state.waiters[number], let continuation = waiter.continuation, waiter.expiresAt <= now else { return false }
            state.waiters[number] = nil
            continuation.resume(returning: .wouldExpire(limit: check.kind.configurationKey))
            return true
        }
    }
}
