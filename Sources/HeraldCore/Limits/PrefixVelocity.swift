import Foundation

/// SMS-pumping detection per number prefix: counts sends in fixed windows, keeps an exponentially
/// weighted baseline of past windows, and trips when the current window exceeds `multiple` × baseline
/// (and at least `minimumSends`). Pumping attacks drive traffic to a few premium ranges at many times
/// their normal volume; legitimate growth is gradual and moves the baseline with it.
public struct PrefixVelocity: Sendable, Equatable {
    /// `limits.pumping`.
    public struct Settings: Sendable, Equatable {
        public var enabled: Bool
        /// Length of one counting window.
        public var window: Duration
        /// How many times the baseline a window may reach.
        public var multiple: Double
        /// No trip below this many sends in a window (new or quiet prefixes have no baseline).
        public var minimumSends: Int
        /// How long a tripped prefix stays blocked.
        public var blockFor: Duration
        /// Weight of the newest window in the baseline (0.1 ≈ the last ten windows).
        public var smoothing: Double

        public init(enabled: Bool, window: Duration, multiple: Double, minimumSends: Int, blockFor: Duration, smoothing: Double = 0.1) {
            self.enabled = enabled
            self.window = window
            self.multiple = multiple
            self.minimumSends = minimumSends
            self.blockFor = blockFor
            self.smoothing = smoothing
        }
    }

    /// Start of the current window, microseconds.
    public var windowStart: Int64
    /// Sends in the current window.
    public var count: Int
    /// Sends per window in the past (exponentially weighted).
    public var baseline: Double

    public init(windowStart: Int64, count: Int, baseline: Double) {
        self.windowStart = windowStart
        self.count = count
        self.baseline = baseline
    }

    /// Records one send at `now` and says whether the prefix should be blocked.
    public static func observe(_ state: PrefixVelocity?, now: Int64, settings: Settings) -> (state: PrefixVelocity, trips: Bool) {
        let window = max(1, settings.window.microseconds)
        var next = state ?? PrefixVelocity(windowStart: now - now % window, count: 0, baseline: 0)
        if now >= next.windowStart + window {
            // Close the finished window into the baseline, then decay it for every empty window since.
            let elapsed = Int((now - next.windowStart) / window)
            var baseline = next.baseline + settings.smoothing * (Double(next.count) - next.baseline)
            if elapsed > 1 {
                var factor = 1.0
                for _ in 1..<min(elapsed, 10_000) { factor *= 1 - settings.smoothing }
                baseline *= factor
            }
            next = PrefixVelocity(windowStart: next.windowStart + Int64(elapsed) * window, count: 0, baseline: baseline)
        }
        next.count += 1
        let threshold = max(Double(settings.minimumSends), settings.multiple * next.baseline)
        return (next, settings.enabled && Double(next.count) > threshold)
    }
}

/// A blocked prefix, as operators list and lift them.
public struct PrefixBlock: Sendable, Equatable {
    public var projectID: String
    public var prefix: String
    public var until: Date
    public var reason: String
    public var createdAt: Date

    public init(projectID: String, prefix: String, until: Date, reason: String, createdAt: Date) {
        self.projectID = projectID
        self.prefix = prefix
        self.until = until
        self.reason = reason
        self.createdAt = createdAt
    }

    /// What operators read when a velocity trip blocked a prefix.
    public static func reason(tripped velocity: PrefixVelocity, settings: PrefixVelocity.Settings) -> String {
        "\(velocity.count) sends in \(DurationText.format(settings.window)) against a baseline of \(String(format: "%.1f", velocity.baseline)) per window"
    }
}
