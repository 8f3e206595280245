import HeraldTesting

/// A process's /metrics page, read once: each metric summed over its series (every label set), or over
/// the series whose line contains `label`. The bench's suites read group-commit sizes and outcome
/// counters this way.
struct MetricTotals {
    let lines: [Substring]

    init(_ text: String) { lines = text.split(separator: "\n") }

    static func read(port: Int) async throws -> MetricTotals {
        MetricTotals(String(decoding: try await HeraldClient(port: port).get("/metrics").body, as: UTF8.self))
    }

    func total(_ name: String, containing label: String? = nil) -> Double {
        lines.filter { ($0.hasPrefix(name + "{") || $0.hasPrefix(name + " ")) && (label.map($0.contains) ?? true) }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }
}
