/// Which broker node a connection tries next, and when: a pure state machine with the time passed in,
/// so rotation and backoff are tested without a broker or a wait (`ReconnectPolicyTests`).
///
/// The nodes are tried in turn. A node that fails hands over to the next one at once; only when every
/// node failed in a row does the next round wait, with backoff doubling from `initialBackoff` to
/// `maximumBackoff`. A connection that was up and is lost starts again with the next node (the one it
/// was on just failed); with a single node it waits the backoff first, so a broker that accepts and
/// drops connections is not hammered. A success resets the backoff.
struct ReconnectPolicy: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    static let initialBackoff: Duration = .milliseconds(100)
    static let maximumBackoff: Duration = .seconds(5)

    let endpointCount: Int
    /// The node the next attempt goes to.
    private(set) var endpointIndex = 0
    /// When the next attempt may start.
    private(set) var nextAttempt: Instant
    /// How long the next full round of failures waits.
    private(set) var backoff = initialBackoff
    private var failuresThisRound = 0
    /// The last error per node, so a node that stays down is reported once, not every round.
    private var lastError: [Int: String] = [:]

    init(endpointCount: Int, now: Instant) {
        precondition(endpointCount > 0, "a connection needs at least one node")
        self.endpointCount = endpointCount
        self.nextAttempt = now
    }

    /// True when an attempt may start at `now`.
    func isDue(now: Instant) -> Bool { now >= nextAttempt }

    /// How long from `now` until the next attempt (zero when due).
    func wait(now: Instant) -> Duration { max(.zero, nextAttempt - now) }

    /// The attempt succeeded.
    mutating func connected() {
        backoff = Self.initialBackoff
        failuresThisRound = 0
        lastError = [:]
    }

    /// The attempt on `endpointIndex` failed with `error`; true when that is news worth logging (the
    /// node failed differently, or for the first time since the last success).
    mutating func connectFailed(_ error: String, now: Instant) -> Bool {
        let news = lastError[endpointIndex] != error
        lastError[endpointIndex] = error
        advance(failed: true, now: now)
        return news
    }

    /// A connection that was up went away.
    mutating func connectionLost(now: Instant) {
        advance(failed: false, now: now)
    }

    private mutating func advance(failed: Bool, now: Instant) {
        endpointIndex = (endpointIndex + 1) % endpointCount
        if failed { failuresThisRound += 1 }
        if failuresThisRound >= endpointCount || (failed == false && endpointCount == 1) {
            failuresThisRound = 0
            nextAttempt = now + backoff
            backoff = min(backoff * 2, Self.maximumBackoff)
        } else {
            nextAttempt = now
        }
    }
}
