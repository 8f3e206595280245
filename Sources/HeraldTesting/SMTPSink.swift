import Foundation
import Synchronization

/// A real SMTP server for tests: aiosmtpd (from PyPI, in the project venv) run by
/// Tests/python/smtp_sink.py, which parses every accepted message with Python's email package and
/// reports it as JSON. `replies` answer the first DATA commands in turn (e.g. "451 4.3.0 Try again
/// later"); after them every message gets 250.
public final class SMTPSink: Sendable {
    public let port: Int
    let process: Process
    let output = LineBuffer()
    let lifeline = Pipe()

    /// The Python with aiosmtpd and firebase-admin (`HERALDTEST_PYTHON`, else `.herald/venv/bin/python`).
    public static var python: String {
        ProcessInfo.processInfo.environment["HERALDTEST_PYTHON"]
            ?? TestConfiguration.repositoryRoot.appendingPathComponent(".herald/venv/bin/python").path
    }

    /// How the server talks TLS.
    public enum Security: Sendable {
        case plain
        /// Offers STARTTLS and refuses MAIL before it.
        case startTLS
        /// TLS from the first byte (`smtps://`).
        case implicitTLS
    }

    /// `login` ("user:password") makes AUTH mandatory (over TLS only, as real servers do).
    public static func start(replies: [String] = [], security: Security = .plain, login: String? = nil) async throws -> SMTPSink {
        var arguments = replies.flatMap { ["--reply", $0] }
        if security != .plain {
            let files = try TestTLS.shared.serverFiles()
            arguments += [security == .startTLS ? "--starttls" : "--implicit-tls", files.certificate, files.key]
        }
        if let login { arguments += ["--auth", login] }
        let sink = try SMTPSink(port: freePort(), arguments: arguments, scheme: security == .implicitTLS ? "smtps" : "smtp")
        let ready = await eventually(timeout: .seconds(20)) { sink.events("ready").isEmpty == false }
        guard ready else { throw TestFailure("aiosmtpd did not start (is \(python) set up? make test installs it)") }
        return sink
    }

    let scheme: String

    init(port: Int, arguments: [String], scheme: String) throws {
        self.port = port
        self.scheme = scheme
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw TestFailure("\(Self.python) not found: run scripts/setup.sh --test (make test does)")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/smtp_sink.py").path, String(port)] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        // The server exits when this pipe closes, which happens when this process ends for any reason,
        // so a crashed test run leaves no server behind holding its output open.
        process.standardInput = lifeline
        try launch(process)
        // A plain thread blocking on the pipe until end of file (a FileHandle readabilityHandler's dispatch
        // source can outlive the handle and crash the test process).
        let reader = pipe.fileHandleForReading
        let thread = Thread { [output] in
            while true {
                let data = reader.availableData
                if data.isEmpty { return }
                output.append(data)
            }
        }
        thread.name = "smtp-sink-output"
        thread.start()
    }

    /// `smtp://127.0.0.1:<port>` (`smtps://` with implicit TLS).
    public var url: String { "\(scheme)://127.0.0.1:\(port)" }

    /// Reported events of one kind (`ready`, `data`, `accepted`), as JSON objects.
    public func events(_ kind: String) -> [[String: Any]] {
        output.lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["event"] as? String == kind
            else { return nil }
            return object
        }
    }

    /// Messages accepted with 250, parsed.
    public var accepted: [ReceivedMail] { events("accepted").map(ReceivedMail.init) }
    /// DATA commands seen (accepted or refused).
    public var attempts: Int { events("data").count }

    /// SIGTERM now, SIGKILL two seconds later if it is still there, without waiting: tests call this
    /// from `defer` on the cooperative pool, and blocking a pool thread for the sink's exit (up to two
    /// seconds, two threads on two cores) starved the HTTP servers other tests run in this process.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let process = self.process
        Thread {
            for _ in 0..<100 where process.isRunning { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }.start()
    }
}

/// Complete lines of a child process's output, collected from its pipe.
final class LineBuffer: Sendable {
    private let state = Mutex<(lines: [String], partial: Data)>(([], Data()))

    func append(_ data: Data) {
        state.withLock { state in
            state.partial.append(data)
            while let newline = state.partial.firstIndex(of: 0x0A) {
                state.lines.append(String(decoding: state.partial[state.partial.startIndex..<newline], as: UTF8.self))
                state.partial.removeSubrange(state.partial.startIndex...newline)
            }
        }
    }

    var lines: [String] { state.withLock { $0.lines } }
}

/// One message as Python's email package parsed it.
public struct ReceivedMail: @unchecked Sendable {
    // @unchecked: the JSON object is read-only after parsing.
    public let json: [String: Any]

    init(_ json: [String: Any]) { self.json = json }

    public var headers: [String: String] { json["headers"] as? [String: String] ?? [:] }
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public var rawSubject: String? { json["rawSubject"] as? String }
    public var headerCounts: [String: Int] { json["headerCounts"] as? [String: Int] ?? [:] }
    public var contentType: String? { json["contentType"] as? String }
    public var partOrder: [String] { json["partOrder"] as? [String] ?? [] }
    public var mailFrom: String? { json["mailFrom"] as? String }
    public var recipients: [String] { json["rcptTos"] as? [String] ?? [] }
    public var ehlo: String? { json["ehlo"] as? String }
    public var maxLineLength: Int { json["maxLineLength"] as? Int ?? 0 }
    public var hasBareLF: Bool { json["bareLF"] as? Bool ?? true }
    public var defects: [String] { json["defects"] as? [String] ?? [] }

    /// The decoded body of the part with this content type, and its charset and transfer encoding.
    public func part(_ type: String) -> (body: String, charset: String?, transferEncoding: String?)? {
        guard let part = (json["parts"] as? [String: [String: Any]])?[type], let body = part["body"] as? String else { return nil }
        return (body, part["charset"] as? String, part["transferEncoding"] as? String)
    }

    /// The first http(s) URL in the text part.
    public var link: String? {
        guard let text = part("text/plain")?.body, let range = text.range(of: #"https?://[^\s<>"]+"#, options: .regularExpression) else { return nil }
        return String(text[range])
    }
}
