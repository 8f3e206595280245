import Logging
import Synchronization

/// Collects log lines in memory so tests can assert what was (and was not) logged.
public final class CapturedLogs: Sendable {
    let lines = Mutex<[String]>([])

    public init() {}

    /// A logger writing here at `level` (with metadata rendered into each line).
    public func logger(_ label: String = "test", level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: label) { _ in CapturingHandler(sink: self) }
        logger.logLevel = level
        return logger
    }

    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    struct CapturingHandler: LogHandler {
        let sink: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            if let extra = event.metadata { merged.merge(extra) { $1 } }
            sink.append("\(event.level) \(event.message) \(merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        }
    }
}
