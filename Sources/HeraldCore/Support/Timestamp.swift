import Foundation

/// RFC 3339 timestamps with milliseconds in UTC (`2026-11-22T10:15:30.123Z`), as job bodies carry them.
public enum Timestamp {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let plain = Date.ISO8601FormatStyle()

    public static func format(_ date: Date) -> String { withFraction.format(date) }

    /// Parses with or without fractional seconds; nil when malformed.
    public static func parse(_ text: String) -> Date? {
        (try? withFraction.parse(text)) ?? (try? plain.parse(text))
    }
}
