import HeraldCore
import Testing

/// Housekeeping's purge pacing, without a store: when to pause, for how long, and when a pass ends.
@Suite("Purge pacing")
struct PurgePacingTests {
    let pacing = PurgePacing(chunk: 1_000, budget: .seconds(50))

    @Test("a full chunk is followed by a pause as long as it took, so the purge takes about half the writer")
    func fullChunkPauses() {
        #expect(pacing.next(removed: 1_000, took: .milliseconds(12), elapsed: .milliseconds(12)) == .pause(.milliseconds(12)))
        #expect(pacing.next(removed: 1_000, took: .microseconds(300), elapsed: .seconds(30)) == .pause(.microseconds(300)))
    }

    @Test("a statement that found less than a chunk ends the pass: nothing is left")
    func partialChunkIsDone() {
        #expect(pacing.next(removed: 999, took: .milliseconds(12), elapsed: .seconds(1)) == .done)
        #expect(pacing.next(removed: 0, took: .milliseconds(1), elapsed: .milliseconds(1)) == .done)
        // Even past the budget, an empty statement means caught up, not behind.
        #expect(pacing.next(removed: 0, took: .milliseconds(1), elapsed: .seconds(90)) == .done)
    }

    @Test("the pass ends when the next pause would reach its budget, with rows left")
    func budget() {
        #expect(pacing.next(removed: 1_000, took: .milliseconds(10), elapsed: .milliseconds(49_989)) == .pause(.milliseconds(10)))
        #expect(pacing.next(removed: 1_000, took: .milliseconds(10), elapsed: .milliseconds(49_990)) == .budgetSpent)
        #expect(pacing.next(removed: 1_000, took: .milliseconds(10), elapsed: .seconds(51)) == .budgetSpent)
    }

    @Test("a chunk is at least one row")
    func chunkAtLeastOne() {
        #expect(PurgePacing(chunk: 0, budget: .seconds(1)).chunk == 1)
        #expect(PurgePacing(chunk: 0, budget: .seconds(1)).next(removed: 1, took: .zero, elapsed: .zero) == .pause(.zero))
    }

    @Test("a pass carries out the steps: full statements, each followed by its pause, until a short one")
    func passRuns() async throws {
        var left = 25
        var asked: [Int] = []
        var pauses = 0
        let pass = try await PurgePacing(chunk: 10, budget: .seconds(60)).pass(
            delete: { limit in
                asked.append(limit)
                let removed = min(limit, left)
                left -= removed
                return removed
            },
            pause: { _ in pauses += 1 })
        #expect(pass == PurgePacing.Pass(deleted: 25, behind: false))
        #expect(asked == [10, 10, 10])
        #expect(pauses == 2)
    }

    @Test("a pass past its budget is behind; a stopped pass is not, and deletes nothing more")
    func passEnds() async throws {
        let spent = try await PurgePacing(chunk: 10, budget: .zero).pass(delete: { $0 }, pause: { _ in Issue.record("no pause past the budget") })
        #expect(spent == PurgePacing.Pass(deleted: 10, behind: true))
        var statements = 0
        let stopped = try await PurgePacing(chunk: 10, budget: .seconds(60)).pass(
            delete: { limit in
                statements += 1
                return limit
            }, pause: { _ in }, stopping: { statements == 2 })
        #expect(stopped == PurgePacing.Pass(deleted: 20, behind: false))
    }
}

extension PurgePacingTests {
    @Test("housekeeping's budgets leave a pass within the minute: sessions, ledger, three small purges and the limit keys add up to at most 55 s")
    func budgetsFitTheMinute() {
        let budgets = PurgePacing.sessions.budget + PurgePacing.ledger.budget + PurgePacing.smallRows.budget * 3 + PurgePacing.rateKeys.budget
        #expect(budgets <= .seconds(55))
    }
}
