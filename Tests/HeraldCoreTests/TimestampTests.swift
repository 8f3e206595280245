import Foundation
import Testing

@testable import HeraldCore

/// The arithmetic fast paths of `Timestamp` against Foundation's ISO 8601 style, which stays the
/// reference for what the text looks like.
@Suite("Timestamps in job bodies")
struct TimestampTests {
    static let reference = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    static let referencePlain = Date.ISO8601FormatStyle()

    /// Whole microseconds in 1970–2100 that are not within a microsecond of a millisecond boundary:
    /// there Foundation's own floating-point error (it counts from 2001) cannot flip the millisecond.
    static var ordinaryDates: [Date] {
        var generator = SystemRandomNumberGenerator()
        return (0..<5000).map { _ in
            var micros = Int64.random(in: 0..<4_102_444_800_000_000, using: &generator)
            if [0, 999].contains(micros % 1000) { micros += 500 }
            return Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        } + [951_782_400.5, 951_868_799.9995, 1_709_164_800.1235, 0.0005].map { Date(timeIntervalSince1970: $0) }
    }

    /// Whole milliseconds across the fast path's range, edges included (as job bodies carry them).
    static var millisecondTexts: [String] {
        var generator = SystemRandomNumberGenerator()
        let values =
            (0..<5000).map { _ in Int64.random(in: 0..<253_402_300_800_000, using: &generator) }
            + [0, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, 253_402_300_799_999, 2_420_642_497_820]
        return values.map { Timestamp.format(Date(timeIntervalSince1970: Double($0) / 1000)) }
    }

    @Test("format writes what Foundation writes (milliseconds truncated) for 5,000 random instants and the leap-day edges")
    func formatMatchesFoundation() {
        for date in Self.ordinaryDates {
            #expect(Timestamp.format(date) == Self.reference.format(date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test("parse then format gives the same text back across 1970–9999, and parse agrees with Foundation to the millisecond")
    func parseRoundTrips() throws {
        for text in Self.millisecondTexts {
            let parsed = try #require(Timestamp.parse(text), "\(text)")
            #expect(Timestamp.fastParse(text) != nil, "\(text)")
            #expect(Timestamp.format(parsed) == text)
            // Foundation's parse of far-future texts can be a few microseconds off the instant.
            #expect(abs(parsed.timeIntervalSince(try Self.reference.parse(text))) < 0.000_1, "\(text)")
        }
        for date in Self.ordinaryDates {
            let plain = Self.referencePlain.format(date)
            #expect(Timestamp.parse(plain) == (try Self.referencePlain.parse(plain)), "\(plain)")
        }
    }

    @Test("anything but the two shapes, or not a real date: the fast path declines and the answer is Foundation's")
    func otherTextsGoToFoundation() {
        for text in [
            "2026-02-29T10:00:00Z", "2026-13-01T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:15:30.12Z", "2026-11-22 10:15:30Z",
            "2026-11-22T10:15:30+01:00", "1969-12-31T23:59:59.999Z", "2026-11-22T10:15:60Z", "２026-11-22T10:15:30Z", "",
        ] {
            #expect(Timestamp.fastParse(text) == nil, "\(text)")
            #expect(Timestamp.parse(text) == ((try? Self.reference.parse(text)) ?? (try? Self.referencePlain.parse(text))), "\(text)")
        }
    }
}
