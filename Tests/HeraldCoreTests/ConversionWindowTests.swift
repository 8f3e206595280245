import Foundation
import HeraldCore
import Testing

/// The conversion gauges' hour, kept by the minute: what each pass reads again and what it keeps.
@Suite("Conversion window")
struct ConversionWindowTests {
    /// 12:00:30 on some day, in minutes and as a date.
    let minute: Int64 = 29_000_000
    var now: Date { Date(timeIntervalSince1970: TimeInterval(minute * 60 + 30)) }

    func count(_ minute: Int64, _ region: String, _ sent: Int, _ verified: Int) -> ConversionCount {
        ConversionCount(minute: minute, region: region, sent: sent, verified: verified)
    }

    func totals(_ window: ConversionWindow) -> [String] {
        window.totals().map { "\($0.route.region) \($0.sent)/\($0.verified)" }
    }

    @Test("the first pass reads the whole hour from its first minute; later ones only the minutes that can still change")
    func scanStarts() {
        var window = ConversionWindow(settle: .seconds(360))
        #expect(window.scanStart(now: now) == Date(timeIntervalSince1970: TimeInterval((minute - 60) * 60)))
        window.take([], now: now)
        let next = now.addingTimeInterval(60)
        // 6 minutes before the last pass, on a minute boundary.
        #expect(window.scanStart(now: next) == Date(timeIntervalSince1970: TimeInterval((minute - 6) * 60)))
    }

    @Test("a pass that failed leaves no minute unread: the next reads from the settle before the last pass taken")
    func failedPassesAreCaughtUp() {
        var window = ConversionWindow(settle: .seconds(360))
        window.take([], now: now)
        // Ten minutes without a pass taken (the store was down).
        let later = now.addingTimeInterval(600)
        #expect(window.scanStart(now: later) == Date(timeIntervalSince1970: TimeInterval((minute - 6) * 60)))
        // And never before the hour.
        let muchLater = now.addingTimeInterval(7_200)
        #expect(window.scanStart(now: muchLater) == Date(timeIntervalSince1970: TimeInterval((minute + 60) * 60)))
    }

    /// A restart with `codeTTL` cut from 10 minutes to 1 (or another herald-api still configured with
    /// 10): sessions made under the longer life can be verified for 10 minutes, so their minutes are
    /// read again for that long, and no longer once they have left the hour.
    @Test("sessions with a longer code life than configured keep their minutes open for that life, until they leave the hour")
    func sessionsOutliveTheConfiguration() {
        var window = ConversionWindow(settle: .seconds(120))
        window.take([ConversionCount(minute: minute - 5, region: "US", sent: 3, verified: 1, longestLife: 600_000)], now: now)
        #expect(window.effectiveSettle == .seconds(660))
        // 11 minutes before the last pass, not 2.
        #expect(window.scanStart(now: now.addingTimeInterval(60)) == Date(timeIntervalSince1970: TimeInterval((minute - 11) * 60)))
        // Re-read with a late verification: counted.
        window.take([ConversionCount(minute: minute - 5, region: "US", sent: 3, verified: 2, longestLife: 600_000)], now: now.addingTimeInterval(60))
        #expect(totals(window) == ["US 3/2"])
        // Shorter lives never shorten the configured settle.
        var short = ConversionWindow(settle: .seconds(360))
        short.take([ConversionCount(minute: minute, region: "US", sent: 1, verified: 0, longestLife: 30_000)], now: now)
        #expect(short.effectiveSettle == .seconds(360))
        // An hour later the long-lived minute has left the hour, and the settle is the configured one again.
        window.take([], now: now.addingTimeInterval(3_600))
        #expect(window.effectiveSettle == .seconds(120))
    }

    @Test("a settle as long as the hour reads the whole hour every pass")
    func longSettle() {
        var window = ConversionWindow(settle: .seconds(86_400))
        window.take([], now: now)
        let next = now.addingTimeInterval(60)
        #expect(window.scanStart(now: next) == Date(timeIntervalSince1970: TimeInterval((minute + 1 - 60) * 60)))
    }

    @Test("a rescan replaces the minutes it read, keeps the settled ones and forgets those before the hour")
    func rescanReplaces() {
        var window = ConversionWindow(settle: .seconds(360))
        window.take(
            [count(minute - 60, "US", 5, 5), count(minute - 30, "US", 10, 8), count(minute - 3, "US", 4, 0), count(minute, "DE", 2, 0)],
            now: now)
        #expect(totals(window) == ["DE 2/0", "US 19/13"])
        // A minute later: minute − 3's sessions were verified meanwhile, a new send came in, and the
        // rescan from minute − 6 brings them; minute − 60 has left the hour.
        let next = now.addingTimeInterval(60)
        let start = window.scanStart(now: next)
        #expect(start == Date(timeIntervalSince1970: TimeInterval((minute - 6) * 60)))
        window.take([count(minute - 3, "US", 4, 3), count(minute, "DE", 2, 1), count(minute + 1, "FR", 1, 0)], now: next)
        #expect(totals(window) == ["DE 2/1", "FR 1/0", "US 14/11"])
        // A minute whose sessions all went (purged, or none left) is dropped by the rescan too; FR,
        // whose only session that was, reads zero once.
        let third = next.addingTimeInterval(60)
        window.take([count(minute, "DE", 2, 1)], now: third)
        #expect(totals(window) == ["DE 2/1", "FR 0/0", "US 10/8"])
    }

    @Test("rows before the hour in a scan are not counted")
    func rowsBeforeTheHour() {
        var window = ConversionWindow(settle: .seconds(360))
        window.take([count(minute - 61, "US", 7, 7), count(minute - 60, "US", 1, 0)], now: now)
        #expect(totals(window) == ["US 1/0"])
    }

    @Test("a region whose sessions left the hour is reported once as zero, so its gauges do not keep the last values")
    func vanishedRegion() {
        var window = ConversionWindow(settle: .seconds(360))
        window.take([count(minute - 59, "DE", 100, 5), count(minute, "US", 3, 2)], now: now)
        #expect(totals(window) == ["DE 100/5", "US 3/2"])
        let later = now.addingTimeInterval(120)
        window.take([count(minute, "US", 3, 2)], now: later)
        #expect(totals(window) == ["DE 0/0", "US 3/2"])
        window.take([count(minute, "US", 3, 2)], now: later.addingTimeInterval(60))
        #expect(totals(window) == ["US 3/2"])
    }
}
