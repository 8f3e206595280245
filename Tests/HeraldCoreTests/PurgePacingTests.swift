import HeraldCore
import Testing

/// The ledger purge's pacing, without a store: when to pause, for how long, and when a pass ends.
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
        #expect(PurgePacing(chunk: 0).chunk == 1)
        #expect(PurgePacing(chunk: 0).next(removed: 1, took: .zero, elapsed: .zero) == .pause(.zero))
    }
}
