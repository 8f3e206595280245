import Foundation

/// Which herald-api runs housekeeping when several share a store, and what changed when it tries.
///
/// Every herald-api runs the housekeeping loop, but only the holder of the store's `housekeeping`
/// turn (`TurnStore`) purges. Otherwise each process walks every limit key every ten minutes and
/// looks for expired rows every minute: on PostgreSQL with two APIs the walk alone cost the server
/// about 12–14 µs per send instead of 6–7, and each API more adds as much. The conversion and snapshot
/// gauges stay in every process; they only read.
///
/// The holder renews its turn at every pass (passes start a minute apart, or at once after one that
/// took longer, and take at most 55 s), each time until `term` later, so it keeps the turn while it
/// lives and reaches the store. Another process takes over at its first pass after `term` has run
/// out (a holder that died, hung or lost the store), and at once after a holder that stops gives it
/// up. The lapse is judged by the clock of the process trying, so hosts' clocks may disagree by up to
/// `term` less the longest gap between renewals (about two minutes here) before two processes both
/// think it theirs, which costs only a repeated purge: purges are idempotent deletes.
public struct HousekeepingTurn: Sendable, Equatable {
    /// The turn's name in the store.
    public static let name = "housekeeping"

    /// How long a try holds the turn.
    public let term: Duration
    /// Whether this process held the turn after its last try.
    public private(set) var holding = false

    /// What a try changed, for the log and for state that belongs to one holding (a new holder starts
    /// its own limit-key sweep).
    public enum Change: Sendable, Equatable {
        case took
        case lost
    }

    /// Three minutes: three passes' renewals, so one pass that fails or runs long does not hand the
    /// turn over, and a dead holder's work waits at most three minutes and a pass.
    public init(term: Duration = .seconds(180)) {
        self.term = term
    }

    /// Until when (ms since 1970) a try at `now` holds the turn.
    public func until(now: Date) -> Int64 {
        now.millisecondsSince1970 + term.milliseconds
    }

    /// The turn's row as `herald-admin store status` prints it: who holds it and for how long, or that
    /// its holder stopped renewing it, or that nobody holds it.
    public static func describe(_ turn: (holder: String, until: Int64)?, now: Date) -> String {
        guard let turn else { return "not held: no herald-api has taken it since the last one stopped, or none has run yet" }
        let left = turn.until - now.millisecondsSince1970
        if left > 0 { return "held by \(turn.holder) for \(left / 1000) s more" }
        return "last held by \(turn.holder), lapsed \(-left / 1000) s ago: no herald-api renews it (is one running and reaching the store?)"
    }

    /// After a try: `held` says whether this process holds the turn now. A try that failed (the store
    /// unreachable) counts as not held: the turn runs out in the store unless renewed, so this process
    /// must not count on it.
    public mutating func tried(held: Bool) -> Change? {
        defer { holding = held }
        switch (holding, held) {
        case (false, true): return .took
        case (true, false): return .lost
        default: return nil
        }
    }
}
