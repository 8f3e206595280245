/// How herald-api's housekeeping works through rows it deletes (expired sessions, email codes, app
/// receipts, credentials, ledger rows past `ledger.retention`) and the limit keys it looks through for
/// passed ones (`RateKeySweep`): one statement of `chunk` rows at a time, so a send waits at most for
/// one; while statements come back full, the next follows after a pause as long as the last one took,
/// so even a backlog (a retention just shortened, a day's sessions at thousands a second) takes at
/// most about half of the store's writer. The pass goes on until no row is left or `budget` is spent,
/// since the minute's other housekeeping waits for it.
///
/// A pass is bounded by time, not by a number of statements: a cap of statements caps the rows a minute
/// too, and a ledger fed faster than that for a retention grows without end.
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

    public init(chunk: Int, budget: Duration) {
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

extension PurgePacing {
    /// Housekeeping's pacing of each purge (`StoreMaintenance`). A statement's rows are sized to take
    /// about 2 ms on SQLite (`herald-bench store`): that is what a send issued during it waits.
    /// The budgets add up to 55 s (sessions, ledger, three small purges and the limit keys), so a pass
    /// that falls behind everywhere still ends within the minute; the sessions' 15 s cover a minute's
    /// expired sessions at about 6,000 sends a second (a pass over 120,000 took 4.3–5.1 s on SQLite,
    /// with writes beside it).
    public static let sessions = PurgePacing(chunk: 150, budget: .seconds(15))
    public static let ledger = PurgePacing(chunk: 300, budget: .seconds(20))
    /// Email codes, app receipts and spent credentials: small rows, far fewer than sessions.
    public static let smallRows = PurgePacing(chunk: 150, budget: .seconds(5))
    /// Limit keys looked at per statement (the passed ones among them deleted): 2,000 take about 0.6 ms
    /// on SQLite, and writes beside a paced walk waited less than beside walks of 8,000 a statement
    /// (p99 1.6–2.0 ms against 3.2–3.4, `herald-bench store`). The budget, 5 s a pass, looks
    /// through about six million keys; a larger table is swept over several passes (`RateKeySweep`).
    public static let rateKeys = PurgePacing(chunk: 2_000, budget: .seconds(5))

    /// What one pass did.
    public struct Pass: Sendable, Equatable {
        /// Rows deleted.
        public var deleted = 0
        /// Rows remain because the budget ran out (not because the pass was stopped).
        public var behind = false

        public init(deleted: Int = 0, behind: Bool = false) {
            self.deleted = deleted
            self.behind = behind
        }
    }

    /// Carries out one pass as `next` decides: `delete(chunk)` works through at most `chunk` rows in one
    /// statement and returns how many (deleted, or for the limit keys looked at: fewer than `chunk`
    /// means none is left); `pause` waits between full statements; `stopping` ends the pass
    /// early (shutdown), leaving rows for the next one without calling it behind.
    public func pass(
        delete: (Int) async throws -> Int, pause: (Duration) async -> Void, stopping: () -> Bool = { false }
    ) async throws -> Pass {
        let clock = ContinuousClock()
        let began = clock.now
        var pass = Pass()
        while stopping() == false {
            let started = clock.now
            let removed = try await delete(chunk)
            pass.deleted += removed
            switch next(removed: removed, took: started.duration(to: clock.now), elapsed: began.duration(to: clock.now)) {
            case .done:
                return pass
            case .budgetSpent:
                pass.behind = true
                return pass
            case .pause(let wait):
                await pause(wait)
            }
        }
        return pass
    }
}
