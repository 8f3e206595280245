import Foundation
import HeraldCore
import Logging
import Synchronization

/// Process-wide logging as configuration asks: JSON lines (default, for collectors) or text, on stderr.
public enum HeraldLogging {
    private static let bootstrapped = Mutex(false)

    /// Installs the handler once per process (later calls are ignored, as swift-log requires).
    public static func bootstrap(_ settings: HeraldConfiguration.Logging, output: LineOutput = .standardError) {
        LineOutput.installProcessWide()
        let first = bootstrapped.withLock { done -> Bool in
            defer { done = true }
            return done == false
        }
        guard first else { return }
        let level = Logger.Level(rawValue: settings.level) ?? .info
        let json = settings.format == "json"
        LoggingSystem.bootstrap { label in
            var handler = LineLogHandler(label: label, json: json, output: output)
            handler.logLevel = level
            return handler
        }
    }
}

/// One line per event, JSON or text. Never formats anything but the message and its metadata; callers
/// keep secrets out of both. Lines go through `LineOutput`, which drops (and counts) what it cannot write
/// rather than stopping the process.
public struct LineLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String
    let json: Bool
    let output: LineOutput

    public init(label: String, json: Bool, output: LineOutput) {
        self.label = label
        self.json = json
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let time = Timestamp.format(Date())
        let line: String
        if json {
            var object: [String: String] = ["time": time, "level": event.level.rawValue, "logger": label, "message": "\(event.message)"]
            for (key, value) in merged { object[key] = "\(value)" }
            // JSONWriter, not JSONSerialization: that one sorts keys through ICU collation, which alone
            // mapped several MiB of ICU into every process, and costs more per line.
            var writer = JSONWriter(capacity: 256)
            writer.object(object.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })
            line = String(decoding: writer.bytes, as: UTF8.self)
        } else {
            let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = "\(time) \(event.level.rawValue.uppercased()) \(label): \(event.message)\(fields.isEmpty ? "" : " " + fields)"
        }
        output.write(line)
    }
}
