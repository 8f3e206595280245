import Foundation

/// Codes sent by SMS and codes verified, for one region in one minute (by the sessions' creation).
public struct ConversionCount: Sendable, Equatable {
    /// Minutes since 1970 (`created_at_ms / 60,000`).
    public var minute: Int64
    public var region: String
    public var sent: Int
    public var verified: Int

    public init(minute: Int64, region: String, sent: Int, verified: Int) {
        (self.minute, self.region, self.sent, self.verified) = (minute, region, sent, verified)
    }

    /// The minute `date` falls in, in minutes since 1970 (rounded down, as `created_at_ms / 60000`).
    public static func minute(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 60).rounded(.down))
    }
}

/// The last hour's verified ÷ sent per region (the `herald_sms_conversion_*` gauges), kept by the
/// minute, so that each pass reads again only the minutes whose sessions can still change. A session
/// is verified before it expires or never, so a minute is final once `settle` (the longest code life,
/// plus a margin for late commits and other hosts' clocks) has passed. Scanning the whole hour each
/// minute cost every herald-api about half a microsecond per session of that hour: most of a second
/// of each minute at 500 sends/s, and growing with the rate.
public struct ConversionWindow: Sendable {
    public let span: Duration
    public let settle: Duration
    private var minutes: [Int64: [String: (sent: Int, verified: Int)]] = [:]
    /// When the last scan taken began.
    private var lastScan: Date?
    /// Regions with sessions in the hour, as of the last scan taken.
    private var regions: Set<String> = []
    /// Regions that had sessions in the hour before the last scan taken and have none now: reported
    /// once as zero, since a gauge keeps its last value and a country's last hour of pumping would
    /// otherwise hold the conversion alert until the process restarts.
    private var vanished: Set<String> = []

    public init(span: Duration = .seconds(3_600), settle: Duration) {
        self.span = span
        self.settle = settle
    }

    /// Where a scan at `now` starts, on a minute boundary: the span's first minute on the first pass
    /// (or when `settle` reaches across the span); otherwise `settle` before the last scan taken, so a
    /// pass that failed leaves no minute unread.
    public func scanStart(now: Date) -> Date {
        var start = now.addingTimeInterval(-span.seconds)
        if let lastScan { start = max(start, lastScan.addingTimeInterval(-settle.seconds)) }
        return Date(timeIntervalSince1970: TimeInterval(ConversionCount.minute(of: start) * 60))
    }

    /// Takes a scan that began at `now` from `scanStart(now:)`: its minutes replace what was kept from
    /// there on, and minutes before the span are forgotten.
    public mutating func take(_ rows: [ConversionCount], now: Date) {
        let start = ConversionCount.minute(of: scanStart(now: now))
        let first = ConversionCount.minute(of: now.addingTimeInterval(-span.seconds))
        minutes = minutes.filter { $0.key >= first && $0.key < start }
        for row in rows where row.minute >= first {
            minutes[row.minute, default: [:]][row.region, default: (0, 0)].sent += row.sent
            minutes[row.minute, default: [:]][row.region, default: (0, 0)].verified += row.verified
        }
        lastScan = now
        let present = Set(minutes.values.flatMap(\.keys))
        vanished = regions.subtracting(present)
        regions = present
    }

    /// Per region, sorted by region: sent and verified over the span's minutes; zero for a region
    /// whose last sessions left the hour with the last scan taken.
    public func totals() -> [(region: String, sent: Int, verified: Int)] {
        var regions: [String: (sent: Int, verified: Int)] = Dictionary(uniqueKeysWithValues: vanished.map { ($0, (0, 0)) })
        for counts in minutes.values {
            for (region, count) in counts {
                regions[region, default: (0, 0)].sent += count.sent
                regions[region, default: (0, 0)].verified += count.verified
            }
        }
        return regions.sorted { $0.key < $1.key }.map { ($0.key, $0.value.sent, $0.value.verified) }
    }
}
