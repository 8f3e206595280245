import Foundation
import HeraldCore
import Testing

/// When housekeeping walks the limit keys and where it goes on, without a store.
@Suite("Rate key sweep")
struct RateKeySweepTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("the first pass starts a sweep from the first key; full chunks move the cursor, a short one ends the sweep")
    func oneSweep() {
        var sweep = RateKeySweep(period: .seconds(600))
        #expect(sweep.start(now: start) == "")
        sweep.walked(100, of: 100, last: "k100")
        #expect(sweep.cursor == "k100")
        sweep.walked(100, of: 100, last: "k200")
        #expect(sweep.cursor == "k200")
        sweep.walked(40, of: 100, last: "k240")
        #expect(sweep.cursor == nil)
        #expect(sweep.began == start)
    }

    @Test("no sweep starts again within the period; the first pass after it starts one")
    func period() {
        var sweep = RateKeySweep(period: .seconds(600))
        _ = sweep.start(now: start)
        sweep.walked(3, of: 100, last: "k3")
        #expect(sweep.start(now: start.addingTimeInterval(60)) == nil)
        #expect(sweep.start(now: start.addingTimeInterval(599)) == nil)
        #expect(sweep.start(now: start.addingTimeInterval(600)) == "")
        #expect(sweep.began == start.addingTimeInterval(600))
    }

    @Test("a sweep cut off by a pass's budget goes on from its cursor in the next pass, even within the period")
    func goesOn() {
        var sweep = RateKeySweep(period: .seconds(600))
        _ = sweep.start(now: start)
        sweep.walked(100, of: 100, last: "k100")
        #expect(sweep.start(now: start.addingTimeInterval(60)) == "k100")
        // Going on does not restart the period.
        #expect(sweep.began == start)
        sweep.walked(0, of: 100, last: nil)
        #expect(sweep.start(now: start.addingTimeInterval(120)) == nil)
    }

    @Test("a sweep is overdue only while still under way a period after it started")
    func overdue() {
        var sweep = RateKeySweep(period: .seconds(600))
        #expect(sweep.overdue(now: start) == false)
        _ = sweep.start(now: start)
        sweep.walked(100, of: 100, last: "k100")
        #expect(sweep.overdue(now: start.addingTimeInterval(599)) == false)
        #expect(sweep.overdue(now: start.addingTimeInterval(600)))
        sweep.walked(1, of: 100, last: "k101")
        #expect(sweep.overdue(now: start.addingTimeInterval(900)) == false)
    }

    @Test("a clock set back behind the last start starts a sweep rather than waiting to catch up")
    func clockBack() {
        var sweep = RateKeySweep(period: .seconds(600))
        _ = sweep.start(now: start)
        sweep.walked(0, of: 100, last: nil)
        #expect(sweep.start(now: start.addingTimeInterval(-3_600)) == "")
    }

    @Test("a result for a sweep not under way changes nothing")
    func strayResult() {
        var sweep = RateKeySweep(period: .seconds(600))
        sweep.walked(100, of: 100, last: "k100")
        #expect(sweep.cursor == nil)
        #expect(sweep.start(now: start) == "")
    }

    @Test("housekeeping's sweep starts at most every ten minutes")
    func housekeeping() {
        #expect(RateKeySweep.housekeeping.period == .seconds(600))
    }
}
