import Metrics
import Prometheus
import Synchronization

/// Process-wide metrics: swift-metrics backed by one Prometheus registry, exported as text.
public enum HeraldMetrics {
    private static let registryBox = Mutex<PrometheusCollectorRegistry?>(nil)

    /// Bootstraps swift-metrics once per process and returns the registry `/metrics` exports.
    @discardableResult
    public static func bootstrap() -> PrometheusCollectorRegistry {
        registryBox.withLock { current in
            if let current { return current }
            let registry = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: registry)
            factory.defaultDurationHistogramBuckets = [
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
            ]
            MetricsSystem.bootstrap(factory)
            current = registry
            // Which build is answering, and a drop counter that reads 0 until a log line is lost.
            Gauge(label: "herald_build_info", dimensions: [("version", BuildInfo.version), ("revision", BuildInfo.revision)]).record(1)
            for stream in ["stderr", "stdout"] {
                Counter(label: "herald_log_lines_dropped_total", dimensions: [("stream", stream)]).increment(by: 0)
            }
            return registry
        }
    }

    /// The Prometheus text exposition of everything recorded so far.
    public static func exposition() -> String {
        guard let registry = registryBox.withLock({ $0 }) else { return "" }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
