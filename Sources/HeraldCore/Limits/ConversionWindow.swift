import Foundation

/// Codes sent by SMS and codes verified, for one region and provider in one minute (by the sessions'
/// creation).
public struct ConversionCount: Sendable, Equatable {
    /// Minutes since 1970 (`created_at_ms / 60,000`).
    public var minute: Int64
    public var region: String
    /// The provider the code's SMS went through (its ledger row's; "" before a worker claimed it).
    public var provider: String
    public var sent: Int
    public var verified: Int
    /// The longest code life (expiry less creation, ms) among those sessions: what the sessions
    /// themselves say about how long their minute can still change, whatever this process's
    /// configuration says (`ConversionWindow`).
    public var longestLife: Int64

    public init(minute: Int64, region: String, provider: String = "", sent: Int, verified: Int, longestLife: Int64 = 0) {
        (self.minute, self.region, self.provider, self.sent, self.verified, self.longestLife) = (
            minute, region, provider, sent, verified, longestLife
        )
    }

    /// What the counts are kept and reported by.
    public var route: ConversionRoute { ConversionRoute(region: region, provider: provider) }

    /// The minute `date` falls in, in minutes since 1970 (rounded down, as `created_at_ms / 60000`).
    public static func minute(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 60).rounded(.down))
    }
}

/// A region and the provider that carried its codes: an operator sees a provider that reports
/// delivery while nobody signs in.
public struct ConversionRoute: Sendable, Hashable, Comparable {
    public var region: String
    public var provider: String

    public init(region: String, provider: String) {
        self.region = region
        self.provider = provider
    }

    public static func < (lhs: ConversionRoute, rhs: ConversionRoute) -> Bool { (lhs.region, lhs.provider) < (rhs.region, rhs.provider) }
}

/// The last hour's verified ÷ sent per region and provider (the `herald_sms_conversion_*` gauges), kept by the
/// minute, so that each pass reads again only the minutes whose sessions can still change. A session
/// is verified before it expires or never, so a minute is final once the longest code life, plus
/// `margin` for late commits and other hosts' clocks, has passed. Scanning the whole hour each minute
/// cost every herald-api about half a microsecond per session of that hour: most of a second of each
/// minute at 500 sends/s, and growing with the rate.
///
/// The longest code life is the larger of the configured one (`settle`, from this process's
/// configuration) and the longest the hour's sessions had (`ConversionCount.longestLife`): after a
/// restart with a shorter `codeTTL`, or beside another herald-api configured with a longer one,
/// sessions verified late in a longer life are still counted.
public struct ConversionWindow: Sendable {
    public let span: Duration
    /// The configured longest code life plus `margin`: the least a minute stays open.
    public let settle: Duration
    private var minutes: [Int64: [ConversionRoute: (sent: Int, verified: Int)]] = [:]
    /// The longest code life (ms) among each kept minute's sessions.
    private var lives: [Int64: Int64] = [:]
    /// When the last scan taken began.
    private var lastScan: Date?
    /// Routes with sessions in the hour, as of the last scan taken.
    private var routes: Set<ConversionRoute> = []
    /// Routes that had sessions in the hour before the last scan taken and have none now: reported
    /// once as zero, since a gauge keeps its last value and a country's last hour of pumping would
    /// otherwise hold the conversion alert until the process restarts.
    private var vanished: Set<ConversionRoute> = []

    /// For late commits and other hosts' clocks, beyond a code's life.
    public static let margin: Duration = .seconds(60)

    public init(span: Duration = .seconds(3_600), settle: Duration) {
        self.span = span
        self.settle = settle
    }

    /// How long a minute stays open: `settle`, or the longest code life among the kept minutes'
    /// sessions plus `margin` when that is longer.
    public var effectiveSettle: Duration {
        max(settle, .milliseconds(lives.values.max() ?? 0) + Self.margin)
    }

    /// Where a scan at `now` starts, on a minute boundary: the span's first minute on the first pass
    /// (or when the settle reaches across the span); otherwise the settle before the last scan taken,
    /// so a pass that failed leaves no minute unread.
    public func scanStart(now: Date) -> Date {
        var start = now.addingTimeInterval(-span.seconds)
        if let lastScan { start = max(start, lastScan.addingTimeInterval(-effectiveSettle.seconds)) }
        return Date(timeIntervalSince1970: TimeInterval(ConversionCount.minute(of: start) * 60))
    }

    /// Takes a scan that began at `now` from `scanStart(now:)`: its minutes replace what was kept from
    /// there on, and minutes before the span are forgotten.
    public mutating func take(_ rows: [ConversionCount], now: Date) {
        let start = ConversionCount.minute(of: scanStart(now: now))
        let first = ConversionCount.minute(of: now.addingTimeInterval(-span.seconds))
        minutes = minutes.filter { $0.key >= first && $0.key < start }
        lives = lives.filter { $0.key >= first && $0.key < start }
        for row in rows where row.minute >= first {
            minutes[row.minute, default: [:]][row.route, default: (0, 0)].sent += row.sent
            minutes[row.minute, default: [:]][row.route, default: (0, 0)].verified += row.verified
            lives[row.minute] = max(lives[row.minute] ?? 0, row.longestLife)
        }
        lastScan = now
        let present = Set(minutes.values.flatMap(\.keys))
        vanished = routes.subtracting(present)
        routes = present
    }

    /// Per region and provider, sorted: sent and verified over the span's minutes; zero for a route
    /// whose last sessions left the hour with the last scan taken.
    public func totals() -> [(route: ConversionRoute, sent: Int, verified: Int)] {
        var routes: [ConversionRoute: (sent: Int, verified: Int)] = Dictionary(uniqueKeysWithValues: vanished.map { ($0, (0, 0)) })
        for counts in minutes.values {
            for (route, count) in counts {
                routes[route, default: (0, 0)].sent += count.sent
                routes[route, default: (0, 0)].verified += count.verified
            }
        }
        return routes.sorted { $0.key < $1.key }.map { ($0.key, $0.value.sent, $0.value.verified) }
    }
}
