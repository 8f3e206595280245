import Foundation
import Synchronization

/// A real Herald executable started by a test, its output captured to a file for assertions.
public final class HeraldProcess: @unchecked Sendable {
    // @unchecked: every stored property is immutable or Sendable.
    public let name: String
    public let logPath: String
    let process: SpawnedProcess
    /// The log file, open for the child's stdout (and stderr) until this object goes.
    let log: FileHandle
    /// Copies stderr into the log when it is a pipe (`pipeStderr`), until `closeStderrReader()`.
    let stderrRelay: PipeRelay?

    /// Where `swift build` put the executables (`HERALDTEST_BIN_DIR`, else next to the test runner).
    public static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["HERALDTEST_BIN_DIR"] { return dir }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// Starts `executable` (`herald-api`, `herald-sms-worker`, `herald-admin`; or any program by its
    /// absolute path) with `arguments`, inside `networkNamespace` when given (a `TestNetwork` host;
    /// `ip netns exec` execs, so the process keeps its pid). With `pipeStderr`, stderr is a pipe whose
    /// read end the test can close (`closeStderrReader()`), as a log shipper that goes away does; until
    /// then its lines are copied into the log too.
    public init(
        _ executable: String, arguments: [String], logDirectory: String, environment: [String: String] = [:], pipeStderr: Bool = false,
        networkNamespace: String? = nil
    ) throws {
        let binary = executable.hasPrefix("/") ? executable : Self.binDirectory + "/" + executable
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw TestFailure("\(binary) is not built; run `swift build` first (make test does)")
        }
        self.name = (executable as NSString).lastPathComponent
        self.logPath = logDirectory + "/\(name)-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log = handle
        let path = networkNamespace == nil ? binary : TestNetwork.ipPath
        let argv = networkNamespace.map { ["netns", "exec", $0, binary] + arguments } ?? arguments
        var env = ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("HERALD_") == false }
        env.merge(environment) { $1 }
        let stderrFD: Int32
        var writeEnd: Int32 = -1
        if pipeStderr {
            // Close-on-exec from the start (pipe2), so processes other tests spawn meanwhile do not inherit
            // a read end (a second reader would keep the pipe open after the test closes its own).
            var ends: [Int32] = [0, 0]
            guard pipe2(&ends, O_CLOEXEC) == 0 else { throw TestFailure("pipe2() failed") }
            stderrFD = ends[1]
            writeEnd = ends[1]
            stderrRelay = PipeRelay(readEnd: ends[0], into: handle)
        } else {
            stderrFD = handle.fileDescriptor
            stderrRelay = nil
        }
        defer { if writeEnd >= 0 { Glibc.close(writeEnd) } }
        process = try launches.withLock { _ in
            try SpawnedProcess(path: path, arguments: argv, environment: env, stdout: handle.fileDescriptor, stderr: stderrFD)
        }
    }

    /// Closes the read end of the stderr pipe: every later write of the process to stderr fails (EPIPE).
    public func closeStderrReader() {
        stderrRelay?.close()
    }

    public var pid: Int32 { process.pid }
    public var isRunning: Bool { process.isRunning }

    /// Everything the process wrote so far (stdout and stderr).
    public var output: String {
        (FileManager.default.contents(atPath: logPath)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Waits until the output contains `text`.
    public func waitForOutput(_ text: String, timeout: Duration = .seconds(20)) async throws {
        let found = await eventually(timeout: timeout) { output.contains(text) }
        guard found else { throw TestFailure("\(name) never printed '\(text)'; output:\n\(output.suffix(3000))") }
    }

    /// SIGTERM, then waits; returns the exit status.
    @discardableResult
    public func terminate(timeout: Duration = .seconds(30)) async -> Int32 {
        if process.isRunning { kill(process.pid, SIGTERM) }
        return await waitForExit(timeout: timeout)
    }

    /// SIGKILL: no chance to clean up.
    public func kill9() async {
        if process.isRunning { kill(process.pid, SIGKILL) }
        _ = await waitForExit(timeout: .seconds(10))
    }

    public func waitForExit(timeout: Duration) async -> Int32 {
        _ = await eventually(timeout: timeout) { process.isRunning == false }
        if process.isRunning { kill(process.pid, SIGKILL) }
        return process.exitStatus
    }
}

/// Copies a pipe into a file on its own thread until closed; closing closes the pipe's read end.
final class PipeRelay: @unchecked Sendable {
    // @unchecked: `closed` is guarded by `lock`; the descriptor is only used by the relay thread.
    private let lock = NSLock()
    private var closed = false
    private let done = DispatchSemaphore(value: 0)

    init(readEnd: Int32, into handle: FileHandle) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while lock.withLock({ closed }) == false {
                var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                handle.write(Data(buffer[0..<count]))
            }
            Glibc.close(readEnd)
            done.signal()
        }
        thread.start()
    }

    /// Stops copying and closes the read end (waits until it is closed).
    func close() {
        let first = lock.withLock { () -> Bool in
            defer { closed = true }
            return closed == false
        }
        if first { done.wait() }
    }
}

/// Asserts-by-returning: the lines of `text` that contain any of `secrets` as a whole token
/// (not as part of a longer run of digits or base64).
public func linesLeaking(_ secrets: [String], in text: String) -> [String] {
    text.split(separator: "\n").map(String.init).filter { line in
        secrets.contains { secret in
            guard secret.isEmpty == false else { return false }
            var searchRange = line.startIndex..<line.endIndex
            while let range = line.range(of: secret, range: searchRange) {
                let before = range.lowerBound > line.startIndex ? line[line.index(before: range.lowerBound)] : " "
                let after = range.upperBound < line.endIndex ? line[range.upperBound] : " "
                let boundary: (Character) -> Bool = { !($0.isLetter || $0.isNumber) || secret.count > 12 }
                if boundary(before) && boundary(after) { return true }
                searchRange = range.upperBound..<line.endIndex
            }
            return false
        }
    }
}
