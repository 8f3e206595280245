import Foundation

/// Durations as configuration writes them: an integer with a unit (`500ms`, `120s`, `10m`, `6h`, `1d`).
public enum DurationText {
    /// Parses `text`; nil when it is not a positive-or-zero integer followed by ms, s, m, h or d.
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard digits.isEmpty == false, digits.count <= 12, let value = Int64(digits) else { return nil }
        switch trimmed.dropFirst(digits.count) {
        case "ms": return .milliseconds(value)
        case "s": return .seconds(value)
        case "m": return .seconds(value * 60)
        case "h": return .seconds(value * 3600)
        case "d": return .seconds(value * 86_400)
        default: return nil
        }
    }

    /// The shortest exact spelling of `duration` in the same notation (for messages and queue names).
    public static func format(_ duration: Duration) -> String {
        let ms = duration.milliseconds
        if ms % 86_400_000 == 0, ms > 0 { return "\(ms / 86_400_000)d" }
        if ms % 3_600_000 == 0, ms > 0 { return "\(ms / 3_600_000)h" }
        if ms % 60_000 == 0, ms > 0 { return "\(ms / 60_000)m" }
        if ms % 1000 == 0 { return "\(ms / 1000)s" }
        return "\(ms)ms"
    }
}

/// A rate policy as configuration writes it: `N/period` with an optional ` burst B`
/// (`5/1h`, `1000/1m burst 200`). GCRA spacing is `period / limit`; the burst defaults to the limit.
public struct RatePolicy: Sendable, Hashable, CustomStringConvertible {
    /// Events allowed per period.
    public let limit: Int
    /// The window the limit is written against.
    public let period: Duration
    /// How many events may arrive back to back; nil means `limit`.
    public let burst: Int?
    /// The policy as configuration writes it, made once: every limit key of every send ends with it.
    public let description: String
    /// GCRA's spacing and tolerance for it, also made once.
    public let parameters: GCRA.Parameters

    public init(limit: Int, period: Duration, burst: Int? = nil) {
        self.limit = limit
        self.period = period
        self.burst = burst
        self.parameters = GCRA.Parameters(limit: limit, period: period, burst: burst)
        let base = "\(limit)/\(DurationText.format(period))"
        self.description = burst.map { "\(base) burst \($0)" } ?? base
    }

    /// Parses `N/period[ burst B]`; nil when malformed, zero, or the period is zero.
    public static func parse(_ text: String) -> RatePolicy? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 1 || (words.count == 3 && words[1] == "burst") else { return nil }
        let halves = words[0].split(separator: "/", maxSplits: 1)
        guard halves.count == 2, let limit = Int(halves[0]), limit > 0,
            let period = DurationText.parse(String(halves[1])), period > .zero
        else { return nil }
        var burst: Int?
        if words.count == 3 {
            guard let value = Int(words[2]), value > 0 else { return nil }
            burst = value
        }
        return RatePolicy(limit: limit, period: period, burst: burst)
    }
}
