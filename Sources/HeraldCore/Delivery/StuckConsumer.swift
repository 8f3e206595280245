import Foundation

/// Whether a consumer looks stopped or stuck: it holds unacknowledged deliveries while its queue's
/// oldest waiting job has waited longer than `stuckAfter`. A healthy worker settles what it holds
/// within a provider call or a throttle hold; one frozen (SIGSTOP, a hung call) keeps its prefetched
/// jobs from every other worker, and only the oldest job's age shows it.
public enum StuckConsumer {
    public static func isStuck(unacknowledged: Int?, oldestWait: TimeInterval?, stuckAfter: Duration) -> Bool {
        guard let unacknowledged, unacknowledged > 0, let oldestWait else { return false }
        return oldestWait > stuckAfter.seconds
    }
}
