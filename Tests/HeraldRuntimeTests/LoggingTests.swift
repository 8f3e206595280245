import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import Synchronization
import Testing

/// Log lines as collectors read them: one JSON object (or text line) per event, fields sorted, the
/// event's metadata over the logger's, and every line arriving whole through `LineOutput`.
@Suite("Log lines")
struct LoggingTests {
    /// Lines written through a pipe and read as they arrive (a pipe holds 64 KiB; the writer would
    /// block on a full one).
    final class Pipe: Sendable {
        let output: LineOutput
        let writeEnd: Int32
        let received = DispatchSemaphore(value: 0)
        let bytes = Mutex<[UInt8]>([])

        init() {
            var ends: [Int32] = [0, 0]
            precondition(pipe(&ends) == 0)
            let readEnd = ends[0]
            writeEnd = ends[1]
            output = LineOutput(descriptor: writeEnd, stream: "test")
            Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = read(readEnd, &buffer, buffer.count)
                    if count <= 0 { break }
                    bytes.withLock { $0 += buffer[0..<count] }
                }
                close(readEnd)
                received.signal()
            }.start()
        }

        /// Everything written so far (the write end is closed: use once).
        func lines() -> [String] {
            output.flush(timeout: .seconds(5))
            close(writeEnd)
            received.wait()
            let text = bytes.withLock { String(decoding: $0, as: UTF8.self) }
            return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
    }

    static func logger(_ pipe: Pipe, json: Bool) -> Logger {
        var logger = Logger(label: "herald.test") { label in LineLogHandler(label: label, json: json, output: pipe.output) }
        logger[metadataKey: "hb.request.id"] = "r1"
        logger[metadataKey: "project"] = "from-logger"
        return logger
    }

    static let list = Logger.MetadataValue.array([.string("a"), .string("b")])
    static let eventMetadata: Logger.Metadata = ["project": "demo", "phone": "+44******0123", "count": .stringConvertible(3), "list": list]

    @Test("JSON: one object per line, keys sorted, the event's metadata over the logger's, text escaped")
    func json() throws {
        let pipe = Pipe()
        let logger = Self.logger(pipe, json: true)
        logger.info("verification code \"queued\"\nnext", metadata: Self.eventMetadata)
        logger.warning("plain")
        logger.notice("overridden", metadata: ["level": "custom"])
        let lines = pipe.lines()
        try #require(lines.count == 3)

        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: String])
        #expect(first["message"] == "verification code \"queued\"\nnext")
        #expect(first["level"] == "info")
        #expect(first["logger"] == "herald.test")
        #expect(first["project"] == "demo")
        #expect(first["hb.request.id"] == "r1")
        #expect(first["phone"] == "+44******0123")
        #expect(first["count"] == "3")
        #expect(first["list"] == "\(Self.list)")
        let time = try #require(first["time"])
        #expect(Timestamp.parse(time) != nil, "time is an RFC 3339 instant: \(time)")
        #expect(first.count == 9)
        let keys = ["count", "hb.request.id", "level", "list", "logger", "message", "phone", "project", "time"]
        let positions = keys.map { lines[0].range(of: "\"\($0)\":")?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted(), "keys in sorted order")

        let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: String])
        #expect(
            second == [
                "time": second["time"] ?? "", "level": "warning", "logger": "herald.test", "message": "plain", "hb.request.id": "r1",
                "project": "from-logger",
            ])
        let third = try #require(try JSONSerialization.jsonObject(with: Data(lines[2].utf8)) as? [String: String])
        #expect(third["level"] == "custom")
        #expect(lines[2].components(separatedBy: "\"level\"").count == 2, "one level key")
    }

    @Test("text: time, level, logger, message, then key=value pairs sorted")
    func text() throws {
        let pipe = Pipe()
        let logger = Self.logger(pipe, json: false)
        logger.info("verification code queued", metadata: Self.eventMetadata)
        logger.error("no metadata of its own")
        let lines = pipe.lines()
        try #require(lines.count == 2)
        let first = lines[0].split(separator: " ", maxSplits: 1).map(String.init)
        #expect(Timestamp.parse(first[0]) != nil)
        #expect(
            first[1]
                == "INFO herald.test: verification code queued count=3 hb.request.id=r1 list=\(Self.list) phone=+44******0123 project=demo")
        #expect(lines[1].hasSuffix(" ERROR herald.test: no metadata of its own hb.request.id=r1 project=from-logger"))
    }

    @Test("text: a line break, an escape sequence or a bidi control in a value or the message cannot forge a line or reach a terminal")
    func textEscapes() throws {
        let pipe = Pipe()
        let logger = Self.logger(pipe, json: false)
        let forged = "abc\n2026-12-02T06:00:00.000Z CRITICAL herald-sms-worker: number prefix blocked (FORGED LINE)"
        logger.notice(
            "job dead-lettered\r\u{1b}[2J",
            metadata: ["message.id": .string(LogText.messageID(forged)), "producer": "\u{1b}[31mEVIL\u{202E}", "plain": "a\\n"])
        logger.notice("next", metadata: ["message.id": .string(LogText.messageID("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"))])
        let lines = pipe.lines()
        try #require(lines.count == 2, "one line per event: \(lines)")
        #expect(lines[0].contains("job dead-lettered\\r\\u{1b}[2J"))
        #expect(lines[0].contains("producer=\\u{1b}[31mEVIL\\u{202e}"))
        #expect(lines[0].contains("message.id=abc\\n2026-12-02T06:00:00.000Z CRITICAL herald-sms-worker: number … "), "cut to 64")
        #expect(lines[0].contains("plain=a\\\\n"), "a backslash in a value is doubled, so no escape can be faked")
        #expect(lines[0].utf8.contains { $0 < 0x20 } == false)
        #expect(lines[1].contains("message.id=0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"))
    }

    @Test("lines written from several threads at once all arrive whole and in each thread's order")
    func concurrentLines() {
        let pipe = Pipe()
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<500 {
                if index.isMultiple(of: 2) {
                    pipe.output.write("thread \(thread) line \(index) " + String(repeating: "x", count: index))
                } else {
                    pipe.output.write(bytes: Array("thread \(thread) line \(index) \(String(repeating: "x", count: index))".utf8))
                }
            }
        }
        let lines = pipe.lines()
        #expect(lines.count == 2_000)
        for thread in 0..<4 {
            let mine = lines.filter { $0.hasPrefix("thread \(thread) ") }
            #expect(mine.count == 500)
            #expect(mine.enumerated().allSatisfy { index, line in line == "thread \(thread) line \(index) " + String(repeating: "x", count: index) })
        }
    }
}
