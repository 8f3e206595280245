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
        // Fields sorted by key, the event's metadata over the handler's (a request id). herald-api logs a
        // line per send at the default level, so this builds no merged dictionary, no interpolated
        // strings and no intermediate String: its bytes go to the output as they are written.
        var fields: [(key: String, value: String)] = []
        fields.reserveCapacity(metadata.count + (event.metadata?.count ?? 0) + 4)
        if let extra = event.metadata {
            for (key, value) in extra { fields.append((key, Self.text(value))) }
            for (key, value) in metadata where extra[key] == nil { fields.append((key, Self.text(value))) }
        } else {
            for (key, value) in metadata { fields.append((key, Self.text(value))) }
        }
        let time = Timestamp.format(Date())
        if json {
            // Metadata named like a fixed field replaces it, as one JSON object can hold each key once.
            let fixed = [("level", event.level.rawValue), ("logger", label), ("message", event.message.description), ("time", time)]
            for (key, value) in fixed where fields.contains(where: { $0.key == key }) == false { fields.append((key, value)) }
            fields.sort { $0.key < $1.key }
            // JSONWriter, not JSONSerialization: that one sorts keys through ICU collation, which alone
            // mapped several MiB of ICU into every process, and costs more per line.
            var writer = JSONWriter(capacity: 256)
            writer.object(fields.map { (key: $0.key, value: .string($0.value)) })
            output.write(bytes: writer.bytes)
        } else {
            fields.sort { $0.key < $1.key }
            var line = Array(time.utf8)
            line.reserveCapacity(160)
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: event.level.rawValue.uppercased().utf8)
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: label.utf8)
            line.append(contentsOf: ": ".utf8)
            // Values carry outside text (a message id, a provider's error): escaped, so a line break or
            // an escape sequence in one can neither forge a log line nor reach a terminal raw.
            line.append(contentsOf: LogText.escaped(event.message.description).utf8)
            for (key, value) in fields {
                line.append(UInt8(ascii: " "))
                line.append(contentsOf: LogText.escaped(key).utf8)
                line.append(UInt8(ascii: "="))
                line.append(contentsOf: LogText.escaped(value).utf8)
            }
            output.write(bytes: line)
        }
    }

    /// A metadata value as the line shows it (`"\(value)"` for nested ones).
    static func text(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        default: "\(value)"
        }
    }
}
