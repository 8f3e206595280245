import Testing

@testable import HeraldAMQP

/// Publisher-confirm bookkeeping without a broker: every way a publish can settle, and that each
/// settles exactly once.
@Suite("Confirm bookkeeping (pure)")
struct ConfirmTrackerTests {
    typealias Tracker = ConfirmTracker<Int>
    static let start = ContinuousClock.now

    static func tracker(_ count: Int, timeout: Duration = .seconds(5)) -> Tracker {
        var tracker = Tracker()
        for index in 1...count {
            tracker.published(messageID: "m\(index)", deadline: start + timeout + .milliseconds(index), waiter: index)
        }
        return tracker
    }

    @Test("sequence numbers start at 1 per channel and count every publish")
    func sequence() {
        var tracker = Tracker()
        #expect(tracker.published(messageID: nil, deadline: Self.start, waiter: 1) == 1)
        #expect(tracker.published(messageID: nil, deadline: Self.start, waiter: 2) == 2)
        _ = tracker.connectionLost("gone")
        #expect(tracker.published(messageID: nil, deadline: Self.start, waiter: 3) == 1)
    }

    @Test("ack with multiple settles every tag up to it, in order; a single ack settles only its own")
    func acks() {
        var tracker = Self.tracker(10)
        #expect(tracker.acked(4, multiple: true).map(\.0) == [1, 2, 3, 4])
        #expect(tracker.acked(7, multiple: false).map(\.0) == [7])
        #expect(tracker.acked(6, multiple: true).map(\.0) == [5, 6])
        #expect(tracker.count == 3)
        // Tags already settled settle nothing again.
        #expect(tracker.acked(7, multiple: false).isEmpty)
        #expect(tracker.acked(4, multiple: true).isEmpty)
        #expect(tracker.acked(10, multiple: true).map(\.0) == [8, 9, 10])
        #expect(tracker.count == 0)
        #expect(tracker.earliestDeadline == nil)
    }

    @Test("a returned message's ack means unroutable; others in the same multiple ack are confirmed")
    func returned() {
        var tracker = Self.tracker(3)
        tracker.returned(messageID: "m2")
        let settled = tracker.acked(3, multiple: true)
        #expect(settled.map(\.0) == [1, 2, 3])
        #expect(settled.map(\.1) == [.confirmed, .unroutable, .confirmed])
    }

    @Test("nack refuses every tag it covers")
    func nacks() {
        var tracker = Self.tracker(5)
        #expect(tracker.nacked(3, multiple: true).map(\.1) == [.nacked, .nacked, .nacked])
        #expect(tracker.acked(5, multiple: true).map(\.1) == [.confirmed, .confirmed])
    }

    @Test("publishes time out at their deadline, earliest first, and never settle again")
    func deadlines() {
        var tracker = Self.tracker(4, timeout: .seconds(1))
        #expect(tracker.earliestDeadline == Self.start + .seconds(1) + .milliseconds(1))
        #expect(tracker.expired(now: Self.start + .milliseconds(500)).isEmpty)
        let expired = tracker.expired(now: Self.start + .seconds(1) + .milliseconds(2))
        #expect(expired.map(\.0) == [1, 2])
        #expect(expired.allSatisfy { $0.1 == .timedOut })
        #expect(tracker.acked(4, multiple: true).map(\.0) == [3, 4])
    }

    @Test("losing the connection settles everything pending as lost, exactly once")
    func lost() {
        var tracker = Self.tracker(6)
        _ = tracker.acked(2, multiple: true)
        let lost = tracker.connectionLost("socket closed")
        #expect(lost.map(\.0) == [3, 4, 5, 6])
        #expect(lost.allSatisfy { $0.1 == .lost("socket closed") })
        #expect(tracker.connectionLost("again").isEmpty)
        #expect(tracker.acked(6, multiple: true).isEmpty)
    }

    @Test("thousands in flight, confirmed out of order and in bulk: each waiter settled exactly once")
    func exactlyOnce() {
        var tracker = Self.tracker(5000)
        var settled: [Int] = []
        var generator = SystemRandomNumberGenerator()
        var tag: UInt64 = 0
        while tag < 5000 {
            let step = UInt64.random(in: 1...40, using: &generator)
            tag = min(5000, tag + step)
            // Now and then a single ack ahead of the line, then the multiple that covers it.
            if tag + 5 <= 5000, Bool.random(using: &generator) { settled += tracker.acked(tag + 5, multiple: false).map(\.0) }
            settled += tracker.acked(tag, multiple: true).map(\.0)
        }
        settled += tracker.acked(5000, multiple: true).map(\.0)
        #expect(settled.sorted() == Array(1...5000))
        #expect(tracker.count == 0)
    }
}
