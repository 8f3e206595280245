import Foundation

/// RFC 3339 timestamps with milliseconds in UTC (`2026-11-22T10:15:30.123Z`), as job bodies carry them.
///
/// Every job is formatted twice by herald-api and parsed twice by a worker; Foundation's
/// `ISO8601FormatStyle` goes through a calendar for each (about 1.5 % of a send's CPU in herald-api,
/// 2 % of a job's in the worker). The two shapes Herald writes are done here by arithmetic on the
/// civil calendar (years 1970–9999); anything else still goes to Foundation, which stays the
/// reference: a test checks both agree.
public enum Timestamp {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let plain = Date.ISO8601FormatStyle()
    /// 10000-01-01T00:00:00Z in milliseconds since 1970.
    private static let endOfYear9999 = Int64(253_402_300_800_000)

    /// The time of day in UTC to the second (`07:14:17 UTC`), for events an operator reads beside
    /// their own timestamps.
    public static func timeOfDay(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let inDay = ((seconds % 86_400) + 86_400) % 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(inDay / 3600)):\(two(inDay / 60 % 60)):\(two(inDay % 60)) UTC"
    }

    /// Milliseconds truncated, except that an instant within a microsecond (or, far in the future, the
    /// Double's own precision) of a whole millisecond is that millisecond: a parsed `…30.820Z` is held
    /// as the nearest Double, perhaps `…30.8199999`, and must write back the same text.
    public static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let scaled = seconds * 1000
        let nearest = scaled.rounded()
        let milliseconds = Int64(abs(scaled - nearest) < max(0.001, seconds.ulp * 2000) ? nearest : scaled.rounded(.down))
        guard milliseconds >= 0, milliseconds < endOfYear9999 else { return withFraction.format(date) }
        let (day, time) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let (year, month, dayOfMonth) = civil(fromDays: day)
        // Written straight into the string (two per job, every send's).
        return String(unsafeUninitializedCapacity: 24) { out in
            var position = 0
            func digits(_ value: Int64, _ count: Int) {
                var rest = value
                for index in stride(from: position + count - 1, through: position, by: -1) {
                    out[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                position += count
            }
            func mark(_ character: Unicode.Scalar) {
                out[position] = UInt8(ascii: character)
                position += 1
            }
            digits(year, 4)
            mark("-")
            digits(month, 2)
            mark("-")
            digits(dayOfMonth, 2)
            mark("T")
            digits(time / 3_600_000, 2)
            mark(":")
            digits(time / 60_000 % 60, 2)
            mark(":")
            digits(time / 1000 % 60, 2)
            mark(".")
            digits(time % 1000, 3)
            mark("Z")
            return position
        }
    }

    /// Parses with or without fractional seconds; nil when malformed.
    public static func parse(_ text: String) -> Date? {
        if let milliseconds = fastParse(text) { return Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
        return (try? withFraction.parse(text)) ?? (try? plain.parse(text))
    }

    /// Milliseconds since 1970 of `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.mmmZ` (years
    /// 1970–9999, valid calendar dates, no leap second); nil for anything else.
    static func fastParse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 24, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ start: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":")
        else { return nil }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var fraction: Int64 = 0
        if bytes.count == 24 {
            guard bytes[19] == UInt8(ascii: "."), let value = number(20, 3) else { return nil }
            fraction = value
        }
        guard year >= 1970, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
