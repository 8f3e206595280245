import Foundation
import HeraldCore
import Testing

/// What housekeeping's turn decides, without a store: how long a try holds it, and what each try's
/// answer changed.
@Suite("Housekeeping turn")
struct HousekeepingTurnTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a try holds the turn for its term from the try's instant, to the millisecond")
    func until() {
        let turn = HousekeepingTurn(term: .milliseconds(180_250))
        #expect(turn.until(now: start) == 1_800_000_000_000 + 180_250)
        #expect(HousekeepingTurn().until(now: start) == 1_800_000_000_000 + 180_000)
    }

    @Test("taking, keeping, losing and taking again: each change is said once")
    func changes() {
        var turn = HousekeepingTurn()
        #expect(turn.holding == false)
        #expect(turn.tried(held: false) == nil)
        #expect(turn.tried(held: true) == .took)
        #expect(turn.holding)
        #expect(turn.tried(held: true) == nil)
        #expect(turn.tried(held: false) == .lost)
        #expect(turn.holding == false)
        #expect(turn.tried(held: false) == nil)
        #expect(turn.tried(held: true) == .took)
    }

    @Test("store status says who holds the turn and for how long, that it lapsed, or that nobody holds it")
    func described() {
        let now = start.millisecondsSince1970
        #expect(HousekeepingTurn.describe(("api-1:42:abcdef", now + 143_500), now: start) == "held by api-1:42:abcdef for 143 s more")
        #expect(HousekeepingTurn.describe(("api-1:42:abcdef", now), now: start).hasPrefix("last held by api-1:42:abcdef, lapsed 0 s ago"))
        #expect(HousekeepingTurn.describe(("api-1:42:abcdef", now - 75_000), now: start).hasPrefix("last held by api-1:42:abcdef, lapsed 75 s ago"))
        #expect(HousekeepingTurn.describe(nil, now: start).hasPrefix("not held"))
    }
}
