import Testing

@testable import HeraldAMQP

/// Node rotation and backoff, with the time passed in: no broker, no waiting.
@Suite("Reconnect policy")
struct ReconnectPolicyTests {
    static let start = ContinuousClock.now

    @Test("a failed node hands over to the next at once; a round of failures waits, doubling to 5 s")
    func rotation() {
        var policy = ReconnectPolicy(endpointCount: 3, now: Self.start)
        #expect(policy.isDue(now: Self.start) && policy.endpointIndex == 0)
        var now = Self.start
        var waits: [Duration] = []
        var order: [Int] = []
        for _ in 0..<21 {
            order.append(policy.endpointIndex)
            _ = policy.connectFailed("refused", now: now)
            waits.append(policy.wait(now: now))
            now += policy.wait(now: now)
            #expect(policy.isDue(now: now))
        }
        #expect(order == Array(repeating: [0, 1, 2], count: 7).flatMap { $0 })
        // Within a round nothing waits; each round's end waits the backoff, which doubles up to 5 s.
        let roundEnds = stride(from: 2, to: waits.count, by: 3).map { waits[$0] }
        #expect(
            roundEnds == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .milliseconds(3200), .seconds(5),
            ])
        #expect(waits.enumerated().allSatisfy { $0.offset % 3 == 2 || $0.element == .zero })
        #expect(policy.isDue(now: now - .milliseconds(1)) == false, "not before the wait is over")
    }

    @Test("a success resets the backoff; a lost connection starts with the next node at once")
    func successAndLoss() {
        var policy = ReconnectPolicy(endpointCount: 2, now: Self.start)
        for _ in 0..<6 { _ = policy.connectFailed("down", now: Self.start) }
        #expect(policy.backoff == .milliseconds(800))
        policy.connected()
        #expect(policy.backoff == ReconnectPolicy.initialBackoff)
        let on = policy.endpointIndex
        policy.connectionLost(now: Self.start)
        #expect(policy.endpointIndex == (on + 1) % 2)
        #expect(policy.wait(now: Self.start) == .zero, "the other node is tried at once")
    }

    @Test("with one node a lost connection waits the backoff before trying it again")
    func singleNode() {
        var policy = ReconnectPolicy(endpointCount: 1, now: Self.start)
        policy.connected()
        policy.connectionLost(now: Self.start)
        #expect(policy.endpointIndex == 0)
        #expect(policy.wait(now: Self.start) == .milliseconds(100))
        policy.connected()
        policy.connectionLost(now: Self.start)
        #expect(policy.wait(now: Self.start) == .milliseconds(100), "the success in between reset it")
    }

    @Test("a node's error is news once: the same error again is not, a different one or one after a success is")
    func news() {
        var policy = ReconnectPolicy(endpointCount: 2, now: Self.start)
        var news: [Bool] = []
        for error in ["refused", "refused", "refused", "timed out"] { news.append(policy.connectFailed(error, now: Self.start)) }
        // Node 0 refused, node 1 refused (its first), node 0 refused again (old news), node 1 timed out (new).
        #expect(news == [true, true, false, true])
        policy.connected()
        let afterSuccess = policy.connectFailed("refused", now: Self.start)
        #expect(afterSuccess)
    }
}
