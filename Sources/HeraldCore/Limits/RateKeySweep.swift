import Foundation

/// When housekeeping walks the limit keys to delete those whose time has passed, and where it goes on.
///
/// A key whose TAT has passed allows exactly what a missing key allows (`GCRA`), so deleting it only
/// frees space, and there is no index on the TAT (it cost every send more than it saved). Finding the
/// passed keys means reading every key, live ones included, and a key is live long after its send:
/// 2.4 hours under the default `10/1d` per number, 12 minutes under `5/1h`. Walked every minute, a
/// send's keys were read about 156 times over their lives: 30–51 µs of herald-api's CPU per send in
/// steady state (190–330 ns a key on SQLite, `herald-bench store`), whatever the send rate.
/// So a sweep starts at most once every `period`; the keys that pass meanwhile wait for the next one,
/// a table at most a period's passed keys larger. A sweep that does not end within one pass's budget
/// goes on from `cursor` in the next pass, so a large table is swept over several minutes rather
/// than holding the writer.
public struct RateKeySweep: Sendable, Equatable {
    /// How often a sweep starts at most.
    public let period: Duration
    /// The last key walked of the sweep under way (`""` before its first chunk); nil when none is.
    public private(set) var cursor: String?
    /// When the last sweep started.
    public private(set) var began: Date?

    public init(period: Duration) {
        self.period = period
    }

    /// Ten minutes: a send's keys are read about 18 times instead of 156 (3–6 µs per send), and the
    /// table carries at most ten minutes of passed keys beyond the live ones.
    public static let housekeeping = RateKeySweep(period: .seconds(600))

    /// Where a pass at `now` walks from: the sweep under way, a new sweep (from `""`) when the last
    /// one started at least `period` ago, or nil (nothing to walk in this pass). A clock set back
    /// behind the last start starts a sweep rather than waiting for the clock to catch up.
    public mutating func start(now: Date) -> String? {
        if let cursor { return cursor }
        if let began, now >= began, now.timeIntervalSince(began) < period.seconds {
            return nil
        }
        began = now
        cursor = ""
        return ""
    }

    /// A sweep still under way `period` after it started: the walk is behind the keys' growth.
    public func overdue(now: Date) -> Bool {
        guard cursor != nil, let began else { return false }
        return now.timeIntervalSince(began) >= period.seconds
    }

    /// After a chunk that looked at `walked` keys of at most `limit`, the last being `last`: a short
    /// chunk reached the end of the keys and ends the sweep.
    public mutating func walked(_ walked: Int, of limit: Int, last: String?) {
        guard cursor != nil else { return }
        cursor = walked < limit ? nil : (last ?? cursor)
    }
}
