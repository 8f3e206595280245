/// How herald-api's housekeeping works through ledger rows past `ledger.retention`: one statement of
/// `chunk` rows at a time, so a send waits at most for one; while statements come back full, the next
/// follows after a pause as long as the last one took, so even a backlog (a retention just shortened)
/// takes at most about half of the store's writer. The pass goes on until no row is left or `budget`
/// is spent, since the minute's other housekeeping waits for it.
///
/// A fixed number of statements per pass (50 until 2026-11-28) capped the purge at 50,000 rows a
/// minute, 833 a second: a ledger fed faster than that for a month grew without end.
public struct PurgePacing: Sendable, Equatable {
    /// What housekeeping does after a statement.
    public enum Step: Sendable, Equatable {
        /// Rows may remain: wait this long, then delete the next chunk.
        case pause(Duration)
        /// The statement found fewer rows than a chunk: nothing is left to delete.
        case done
        /// Rows remain, but the pass has used its time; the next pass, a minute later, goes on.
        case budgetSpent
    }

    /// Rows per statement.
    public let chunk: Int
    /// How long one pass may delete (pauses included).
    public let budget: Duration

    public init(chunk: Int = 1_000, budget: Duration = .seconds(50)) {
        self.chunk = max(1, chunk)
        self.budget = budget
    }

    /// The step after a statement that deleted `removed` rows in `took`, `elapsed` into the pass
    /// (that statement included).
    public func next(removed: Int, took: Duration, elapsed: Duration) -> Step {
        if removed < chunk { return .done }
        if elapsed + took >= budget { return .budgetSpent }
        return .pause(took)
    }
}
