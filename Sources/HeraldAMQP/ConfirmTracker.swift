/// Publisher-confirm bookkeeping for one confirm-mode channel, as a pure state machine: the driver
/// reports what happened (published, returned, ack, nack, time passed, connection lost) and gets back
/// which waiters are settled and how. No I/O and no clock of its own; tested without a broker
/// (`ConfirmTrackerTests`).
///
/// RabbitMQ's rules it encodes: every publish on the channel takes the next sequence number, from 1
/// for each new channel; `basic.ack`/`basic.nack` settle one tag, or with `multiple` every tag up to it;
/// a mandatory message that could not be routed comes back as `basic.return` *before* its ack, so an
/// ack of a returned message means "unroutable", not "stored". A publish settles exactly once: by the
/// broker, by its deadline, or when the connection is lost (it may or may not have landed).
struct ConfirmTracker<Waiter> {
    enum Outcome: Equatable, Sendable {
        case confirmed
        case nacked
        case unroutable
        case timedOut
        /// The connection ended first (with this reason).
        case lost(String)
    }

    private struct Entry: Tagged {
        /// The publish's sequence number, which the broker's ack names.
        var tag: UInt64
        var messageID: String?
        var deadline: ContinuousClock.Instant
        var waiter: Waiter
    }

    /// Unsettled publishes in sequence order.
    private var entries = TagQueue<Entry>()
    private var nextSequence: UInt64 = 1
    /// Message ids the broker returned as unroutable and has not confirmed yet.
    private var returned: Set<String> = []

    var count: Int { entries.count }

    /// The earliest deadline still pending. Deadlines come from one publish timeout per connection, so
    /// they grow with the sequence: the first pending one is the earliest.
    var earliestDeadline: ContinuousClock.Instant? { entries.first?.deadline }

    /// A publish went out; returns its sequence number.
    @discardableResult
    mutating func published(messageID: String?, deadline: ContinuousClock.Instant, waiter: Waiter) -> UInt64 {
        let sequence = nextSequence
        nextSequence += 1
        entries.append(Entry(tag: sequence, messageID: messageID, deadline: deadline, waiter: waiter))
        return sequence
    }

    /// `basic.return`: the message with this id had no queue to go to; its confirm follows.
    mutating func returned(messageID: String) {
        returned.insert(messageID)
    }

    /// `basic.ack`.
    mutating func acked(_ tag: UInt64, multiple: Bool) -> [(Waiter, Outcome)] {
        settle(tag, multiple: multiple).map { entry in
            if let id = entry.messageID, returned.remove(id) != nil { return (entry.waiter, .unroutable) }
            return (entry.waiter, .confirmed)
        }
    }

    /// `basic.nack`: the broker could not take the message.
    mutating func nacked(_ tag: UInt64, multiple: Bool) -> [(Waiter, Outcome)] {
        settle(tag, multiple: multiple).map { entry in
            if let id = entry.messageID { returned.remove(id) }
            return (entry.waiter, .nacked)
        }
    }

    /// Publishes whose deadline passed by `now` (front of the line only: deadlines grow with the sequence).
    mutating func expired(now: ContinuousClock.Instant) -> [(Waiter, Outcome)] {
        entries.removeFirst { $0.deadline <= now }.map { ($0.waiter, .timedOut) }
    }

    /// The connection (and with it the channel) is gone: everything pending settles as lost, and the
    /// next channel counts from 1 again.
    mutating func connectionLost(_ reason: String) -> [(Waiter, Outcome)] {
        let settled = entries.removeAll().map { ($0.waiter, Outcome.lost(reason)) }
        nextSequence = 1
        returned = []
        return settled
    }

    /// Removes and returns the entries `tag` settles, in sequence order.
    private mutating func settle(_ tag: UInt64, multiple: Bool) -> [Entry] {
        guard multiple else { return entries.remove(tag: tag).map { [$0] } ?? [] }
        return entries.removeFirst { $0.tag <= tag }
    }
}
