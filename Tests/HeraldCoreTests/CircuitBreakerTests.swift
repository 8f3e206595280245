import Foundation
import HeraldCore
import Testing

/// Every transition of a provider's breaker, with the time passed in.
@Suite("Circuit breaker")
struct CircuitBreakerTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    @Test("failures over the ratio of at least minimumCalls open it; below minimumCalls they do not")
    func ratio() {
        var breaker = CircuitBreaker(settings: .init(minimumCalls: 20, consecutiveFailures: 100), now: Self.start)
        // 10 calls, all failed: too few to judge by the ratio.
        for index in 0..<10 { #expect(breaker.record(failed: index % 2 == 0, now: Self.at(Double(index) * 0.1)) == nil) }
        #expect(breaker.state == .closed)
        // Then two in three fail: it opens once the window holds 20 calls with more than half failed.
        var opened: (at: Int, CircuitBreaker.Transition)?
        for index in 10..<30 where opened == nil {
            if let transition = breaker.record(failed: index % 3 != 0, now: Self.at(Double(index) * 0.1)) { opened = (index, transition) }
        }
        guard let (index, transition) = opened else {
            Issue.record("never opened: \(breaker.state)")
            return
        }
        #expect(index == 19, "the 20th call")
        #expect(transition.to == .open(since: Self.at(1.9)))
        #expect(transition.reason == "12 of 20 calls failed in 30s", "\(transition.reason)")
    }

    @Test("consecutive failures open it whatever the ratio; a success in between resets the run")
    func inARow() {
        var breaker = CircuitBreaker(settings: .init(consecutiveFailures: 3), now: Self.start)
        breaker.record(failed: true, now: Self.at(1))
        breaker.record(failed: true, now: Self.at(2))
        breaker.record(failed: false, now: Self.at(3))
        breaker.record(failed: true, now: Self.at(4))
        breaker.record(failed: true, now: Self.at(5))
        #expect(breaker.state == .closed)
        #expect(breaker.record(failed: true, now: Self.at(6))?.reason == "3 failures in a row")
        #expect(breaker.state == .open(since: Self.at(6)))
    }

    @Test("open refuses until the cool-down; then probes; they close it when all succeed")
    func coolDownAndProbes() {
        var breaker = CircuitBreaker(settings: .init(consecutiveFailures: 1, coolDown: .seconds(30), probes: 2), now: Self.start)
        breaker.record(failed: true, now: Self.at(0))
        #expect(breaker.permission(now: Self.at(29)).0 == .refused(until: Self.at(30)))
        let (first, toHalfOpen) = breaker.permission(now: Self.at(30))
        #expect(first == .probe && toHalfOpen?.to == .halfOpen(since: Self.at(30), admitted: 1, succeeded: 0))
        #expect(breaker.permission(now: Self.at(30)).0 == .probe, "the second probe")
        if case .refused = breaker.permission(now: Self.at(30)).0 {} else { Issue.record("a third call went through while probing") }
        #expect(breaker.record(failed: false, now: Self.at(31)) == nil)
        #expect(breaker.record(failed: false, now: Self.at(31))?.to == .closed)
        #expect(breaker.permission(now: Self.at(32)).0 == .call)
        #expect(breaker.windowCounts(now: Self.at(32)).calls == 0, "closing starts a clean window")
    }

    @Test("a failed probe opens it again for another cool-down")
    func failedProbe() {
        var breaker = CircuitBreaker(settings: .init(consecutiveFailures: 1, coolDown: .seconds(10), probes: 3), now: Self.start)
        breaker.record(failed: true, now: Self.at(0))
        _ = breaker.permission(now: Self.at(10))
        #expect(breaker.record(failed: true, now: Self.at(11))?.reason == "a probe failed")
        #expect(breaker.state == .open(since: Self.at(11)))
        #expect(breaker.permission(now: Self.at(20)).0 == .refused(until: Self.at(21)))
    }

    @Test("the window slides: old failures weigh less as their half leaves it, then not at all")
    func sliding() {
        var breaker = CircuitBreaker(settings: .init(minimumCalls: 1000, window: .seconds(30), consecutiveFailures: 1000), now: Self.start)
        for _ in 0..<10 { breaker.record(failed: true, now: Self.at(1)) }
        #expect(breaker.windowCounts(now: Self.at(14)).failures == 10)
        #expect(abs(breaker.windowCounts(now: Self.at(22.5)).failures - 5) < 0.001, "half of the older half still inside")
        #expect(breaker.windowCounts(now: Self.at(31)).failures == 0)
    }

    @Test("an operator's open and close hold against the counts until cleared")
    func overrides() {
        var breaker = CircuitBreaker(settings: .init(consecutiveFailures: 1), now: Self.start)
        #expect(breaker.override(.open, now: Self.at(1))?.reason == "opened by an operator")
        #expect(breaker.permission(now: Self.at(1000)).0 == .refused(until: nil))
        breaker.override(.close, now: Self.at(2))
        breaker.record(failed: true, now: Self.at(3))
        #expect(breaker.state == .forcedClosed(since: Self.at(2)), "a failure does not open a breaker held closed")
        breaker.override(.clear, now: Self.at(4))
        #expect(breaker.record(failed: true, now: Self.at(5))?.to == .open(since: Self.at(5)))
        #expect(breaker.state.gauge == 2)
    }

    @Test("probes whose jobs never reach the provider are given out again after a cool-down, not held for ever")
    func lostProbes() {
        var breaker = CircuitBreaker(settings: .init(consecutiveFailures: 1, coolDown: .seconds(10), probes: 2), now: Self.start)
        breaker.record(failed: true, now: Self.start)
        #expect(breaker.permission(now: Self.at(10)).0 == .probe)
        #expect(breaker.permission(now: Self.at(10)).0 == .probe)
        // Neither answers: the rest wait, but not beyond another cool-down.
        #expect(breaker.permission(now: Self.at(12)).0 == .refused(until: Self.at(13)))
        #expect(breaker.peek(now: Self.at(21)) == .probe, "peek admits nothing")
        #expect(breaker.state == .halfOpen(since: Self.at(10), admitted: 2, succeeded: 0))
        #expect(breaker.permission(now: Self.at(21)).0 == .probe)
        #expect(breaker.state == .halfOpen(since: Self.at(21), admitted: 1, succeeded: 0))
    }

    @Test("a snapshot carries the state and the window's counts: a breaker rebuilt from it decides the same")
    func snapshotRoundTrip() throws {
        let settings = CircuitBreaker.Settings(minimumCalls: 4, consecutiveFailures: 100)
        var breaker = CircuitBreaker(settings: settings, now: Self.start)
        for index in 0..<3 { breaker.record(failed: index > 0, now: Self.at(Double(index))) }
        let data = try JSONEncoder().encode(breaker.snapshot)
        var copy = CircuitBreaker(settings: settings, snapshot: try JSONDecoder().decode(CircuitBreaker.Snapshot.self, from: data))
        #expect(copy == breaker)
        #expect(copy.windowCounts(now: Self.at(3)) == breaker.windowCounts(now: Self.at(3)))
        #expect(copy.record(failed: true, now: Self.at(3))?.to == .open(since: Self.at(3)))
    }
}
