import Foundation

/// Where "now" comes from. Domain code never reads the system clock itself, so tests can move time.
public protocol WallClock: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
}

/// The real clock.
public struct SystemClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}

extension Duration {
    /// The duration in (fractional) seconds, for `Date` arithmetic.
    public var seconds: Double {
        let parts = self.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (truncated).
    public var milliseconds: Int64 {
        let parts = self.components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}

extension Date {
    /// Milliseconds since 1970, the unit Identity Toolkit uses for `createdAt`-style fields.
    public var millisecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// `self` moved forward by a Swift `Duration`.
    public func adding(_ duration: Duration) -> Date { addingTimeInterval(duration.seconds) }
}
