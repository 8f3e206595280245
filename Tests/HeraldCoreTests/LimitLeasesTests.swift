import Foundation
import HeraldCore
import Testing

@Suite("Leased slices of busy shared limits (pure, injected time)")
struct LimitLeasesTests {
    /// 100 sends a second per key from 50 on; a token lasts 100 ms (the defaults).
    let settings = LimitLeases.Settings(above: 50, lifetime: .milliseconds(100))
    /// Burst 64,000: a lease takes at most 2,000.
    let busy = GCRA.Parameters(RatePolicy.parse("64000/1s")!)
    let ms: Int64 = 1_000

    /// Sends `count` under `key` one `every` apart from `start`; returns how many were covered and the leases asked.
    func sends(
        _ leases: inout LimitLeases, _ count: Int, key: String = "project:p:p|64000/1s", start: Int64, every: Int64
    ) -> (covered: Int, leases: [LimitLeases.Lease]) {
        var covered = 0
        var asked: [LimitLeases.Lease] = []
        for index in 0..<count {
            let (isCovered, lease) = leases.cover(key: key, parameters: busy, now: start + Int64(index) * every)
            if isCovered { covered += 1 }
            if let lease { asked.append(lease) }
        }
        return (covered, asked)
    }

    @Test("a key under the threshold, a policy with a small burst and leasing turned off all leave every send to the store")
    func coldKeysAskTheStore() {
        var leases = LimitLeases(settings: settings)
        // 4 sends in 100 ms is 40 a second: under 50.
        let cold = sends(&leases, 4, start: 0, every: 25 * ms)
        #expect(cold.covered == 0 && cold.leases.isEmpty)
        // 5/1h has a burst of 5: a 32nd of it is no lease at all, however busy; the key is not even tracked.
        let perNumber = GCRA.Parameters(RatePolicy.parse("5/1h")!)
        for index in 0..<1000 {
            let answer = leases.cover(key: "number:p:+15555550100|5/1h", parameters: perNumber, now: Int64(index))
            #expect(answer.covered == false && answer.lease == nil)
        }
        #expect(leases.keys == 1)
        var off = LimitLeases(settings: .off)
        let none = sends(&off, 1000, start: 0, every: 10)
        #expect(none.covered == 0 && none.leases.isEmpty && off.keys == 0)
    }

    @Test("a busy key asks one lease at a time sized to half its demand, spends it, and tops up when a quarter is left")
    func busyKeyLeases() throws {
        var leases = LimitLeases(settings: settings)
        // 1,000 a second: the fifth send within 100 ms crosses 50 a second and asks for 2 (half its demand so far).
        let start = sends(&leases, 10, start: 0, every: ms)
        #expect(start.covered == 0)
        let first = try #require(start.leases.first)
        #expect(start.leases.count == 1, "one lease in flight at a time")
        #expect(first.count == 2 && first.at == 4 * ms)
        #expect(first.storeParameters == busy.forCost(2))
        #expect(leases.leased(first, granted: true, retryAfter: 0, now: 11 * ms) == nil)
        #expect(leases.held(key: first.key, now: 11 * ms) == 2)
        // The next send spends one and, at one left (a quarter of the 5 now wanted), asks for 5; the
        // one after spends the last, and the rest ask the store until the lease is back.
        let spend = sends(&leases, 6, start: 11 * ms, every: ms)
        #expect(spend.covered == 2)
        let second = try #require(spend.leases.first)
        #expect(spend.leases.count == 1 && second.count == 5 && second.at == 11 * ms)
        // A steady stream, its leases answered at once: a window's demand (100 at 1 ms) sizes them.
        #expect(leases.leased(second, granted: true, retryAfter: 0, now: 20 * ms) == nil)
        var asked: [LimitLeases.Lease] = []
        var covered = 0
        var lapsed = 0
        for index in 0..<200 {
            let now = 20 * ms + Int64(index) * ms
            lapsed += leases.sweep(now: now).reduce(0) { $0 + $1.count }
            let (isCovered, lease) = leases.cover(key: first.key, parameters: busy, now: now)
            if isCovered { covered += 1 }
            if let lease {
                asked.append(lease)
                #expect(leases.leased(lease, granted: true, retryAfter: 0, now: now) == nil)
            }
        }
        #expect(asked.map(\.count).max()! <= 50, "a lease covers about half a lifetime of demand")
        #expect(asked.last!.count >= 45)
        // Almost every send of a steady stream is covered, and nothing lapses unspent while it lasts;
        // when it stops, what is held (at most a lease and a quarter) goes back.
        #expect(covered >= 190)
        #expect(lapsed == 0)
        let left = leases.sweep(now: 220 * ms + 100 * ms).reduce(0) { $0 + $1.count }
        #expect(left > 0 && left <= 50 + 13)
    }

    @Test("a lease never takes more than a 32nd of the policy's burst")
    func leaseCap() throws {
        var leases = LimitLeases(settings: LimitLeases.Settings(above: 1, lifetime: .seconds(1)))
        let small = GCRA.Parameters(RatePolicy.parse("640/1h")!)
        var largest = 0
        for index in 0..<500 {
            let now = Int64(index) * ms
            if let lease = leases.cover(key: "project:p:p|640/1h", parameters: small, now: now).lease {
                largest = max(largest, lease.count)
                _ = leases.leased(lease, granted: true, retryAfter: 0, now: now)
            }
        }
        #expect(largest == 20)
    }

    @Test("tokens lapse a lifetime after their lease was decided; the sweep gives them back and forgets quiet keys")
    func lapse() throws {
        var leases = LimitLeases(settings: settings)
        let lease = try #require(sends(&leases, 5, start: 0, every: ms).leases.first)
        _ = leases.leased(lease, granted: true, retryAfter: 0, now: 5 * ms)
        #expect(lease.count == 2)
        #expect(leases.cover(key: lease.key, parameters: busy, now: 99 * ms).covered)
        // At 104 ms (100 ms after the decision) the one left is no longer good.
        let after = leases.cover(key: lease.key, parameters: busy, now: lease.at + 100 * ms)
        #expect(after.covered == false)
        #expect(leases.held(key: lease.key, now: lease.at + 100 * ms) == 0)
        let next = try #require(after.lease)
        #expect(leases.leased(next, granted: false, retryAfter: 0, now: next.at) == nil)
        let refunds = leases.sweep(now: lease.at + 100 * ms)
        #expect(refunds == [LimitLeases.Refund(key: lease.key, parameters: busy, count: 1)])
        #expect(refunds.first?.storeParameters == busy.forCost(1))
        // At most one sweep per lifetime; a key is forgotten once quiet for two windows and no longer paused.
        #expect(leases.sweep(now: lease.at + 150 * ms).isEmpty)
        #expect(leases.keys == 1)
        #expect(leases.sweep(now: lease.at + 500 * ms).isEmpty)
        #expect(leases.keys == 1)
        #expect(leases.sweep(now: next.at + 1_000 * ms).isEmpty)
        #expect(leases.keys == 0)
        // A grant that comes back after its tokens lapsed is handed straight back.
        var late = LimitLeases(settings: settings)
        let slow = try #require(sends(&late, 5, start: 0, every: ms).leases.first)
        let back = late.leased(slow, granted: true, retryAfter: 0, now: slow.at + 100 * ms)
        #expect(back == LimitLeases.Refund(key: slow.key, parameters: busy, count: 2))
        #expect(late.held(key: slow.key, now: slow.at + 100 * ms) == 0)
    }

    @Test("a token given back goes to the oldest slice while it holds, or to the store once that slice lapsed")
    func giveBack() throws {
        var leases = LimitLeases(settings: settings)
        let lease = try #require(sends(&leases, 5, start: 0, every: ms).leases.first)
        _ = leases.leased(lease, granted: true, retryAfter: 0, now: 5 * ms)
        #expect(leases.cover(key: lease.key, parameters: busy, now: 6 * ms).covered)
        #expect(leases.held(key: lease.key, now: 6 * ms) == 1)
        #expect(leases.giveBack(key: lease.key, now: 7 * ms) == nil)
        #expect(leases.held(key: lease.key, now: 7 * ms) == 2)
        #expect(leases.giveBack(key: lease.key, now: lease.at + 100 * ms) == LimitLeases.Refund(key: lease.key, parameters: busy, count: 1))
        #expect(leases.giveBack(key: "project:p:other|64000/1s", now: 0) == nil, "a key never covered has nothing to give back")
        // Two slices: once the older has lapsed, a token given back goes to the store, not into the
        // newer slice, whose lapse is later than that of the lease the token may have come from.
        var two = LimitLeases(settings: settings)
        let older = try #require(sends(&two, 5, start: 0, every: ms).leases.first)
        _ = two.leased(older, granted: true, retryAfter: 0, now: 5 * ms)
        let more = sends(&two, 3, start: 50 * ms, every: ms)
        #expect(more.covered == 2)
        let newer = try #require(more.leases.first)
        _ = two.leased(newer, granted: true, retryAfter: 0, now: newer.at)
        let lapse = older.at + 100 * ms
        #expect(two.held(key: older.key, now: lapse) == newer.count)
        #expect(two.giveBack(key: older.key, now: lapse) == LimitLeases.Refund(key: older.key, parameters: busy, count: 1))
        #expect(two.held(key: older.key, now: lapse) == newer.count)
    }

    @Test("a refused lease leaves the key's sends to the store for a second, or its retry-after up to ten seconds")
    func refusedLeasePauses() throws {
        for (retryAfter, pause) in [(Int64(0), Int64(1_000_000)), (3_000_000, 3_000_000), (3_600_000_000, 10_000_000)] {
            var leases = LimitLeases(settings: settings)
            let lease = try #require(sends(&leases, 5, start: 0, every: ms).leases.first)
            #expect(leases.leased(lease, granted: false, retryAfter: retryAfter, now: 5 * ms) == nil)
            let paused = sends(&leases, 1000, start: 6 * ms, every: (pause - 7 * ms) / 1000)
            #expect(paused.covered == 0 && paused.leases.isEmpty, "retry-after \(retryAfter)")
            #expect(leases.cover(key: lease.key, parameters: busy, now: 5 * ms + pause).lease != nil)
        }
    }

    /// Two processes lease from one GCRA row (the store) while sends arrive far faster than the rate.
    @Test("processes leasing from one allowance never pass more than it, and together pass nearly all of it")
    func sharedAllowance() {
        let policy = RatePolicy.parse("2000/1s burst 400")!
        let parameters = GCRA.Parameters(policy)
        let key = "project:p:p|2000/1s burst 400"
        var tat: Int64?
        func store(_ parameters: GCRA.Parameters, _ now: Int64) -> GCRA.Decision {
            let decision = GCRA.decide(tat: tat, now: now, parameters: parameters)
            if decision.allowed { tat = decision.tat }
            return decision
        }
        var processes = [LimitLeases(settings: settings), LimitLeases(settings: settings)]
        var pending: [(process: Int, lease: LimitLeases.Lease, answerAt: Int64)] = []
        var passed: [Int64] = []
        var random = Xorshift(state: 0x9E37_79B9_7F4A_7C15)
        let end: Int64 = 3_000_000
        var now: Int64 = 0
        while now < end {
            now += Int64(random.next() % 200) + 1  // about 10,000 sends a second in all
            let process = Int(random.next() % 2)
            // Leases come back after 0.5–2 ms.
            for answer in pending where answer.answerAt <= now {
                let decision = store(answer.lease.storeParameters, answer.lease.at)
                if let refund = processes[answer.process].leased(answer.lease, granted: decision.allowed, retryAfter: decision.retryAfter, now: now) {
                    tat = GCRA.refund(tat: tat!, now: now, parameters: refund.storeParameters)
                }
            }
            pending.removeAll { $0.answerAt <= now }
            for refund in processes[process].sweep(now: now) { tat = GCRA.refund(tat: tat!, now: now, parameters: refund.storeParameters) }
            let (covered, lease) = processes[process].cover(key: key, parameters: parameters, now: now)
            if let lease { pending.append((process, lease, now + 500 + Int64(random.next() % 1500))) }
            if covered || store(parameters, now).allowed { passed.append(now) }
        }
        // GCRA allows the burst plus the rate over the run; a token spent up to a lifetime after its
        // lease may move that lifetime's worth (200) into the window.
        let allowance = 400 + 2000 * 3 + 200
        #expect(passed.count <= allowance)
        // Every sliding second holds at most the burst, the rate and a lifetime's worth.
        var low = 0
        for (high, time) in passed.enumerated() {
            while passed[low] <= time - 1_000_000 { low += 1 }
            #expect(high - low + 1 <= 400 + 2000 + 200)
        }
        // Tokens held unspent (a 32nd of the burst per process) cost little of the allowance.
        #expect(passed.count >= 400 + 2000 * 3 - 2 * 400)
    }
}
