import Foundation

/// A real Herald executable started by a test, its output captured to a file for assertions.
public final class HeraldProcess: @unchecked Sendable {
    // @unchecked: `process` is only mutated before `run()`; Foundation's Process is thread-safe after.
    public let name: String
    public let logPath: String
    let process: Process

    /// Where `swift build` put the executables (`HERALDTEST_BIN_DIR`, else next to the test runner).
    public static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["HERALDTEST_BIN_DIR"] { return dir }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// Starts `executable` (`herald-api`, `herald-sms-worker`, `herald-admin`) with `arguments`.
    public init(_ executable: String, arguments: [String], logDirectory: String, environment: [String: String] = [:]) throws {
        let binary = Self.binDirectory + "/" + executable
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw TestFailure("\(binary) is not built; run `swift build` first (make test does)")
        }
        self.name = executable
        self.logPath = logDirectory + "/\(executable)-\(UUID().uuidString.prefix(6)).log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("HERALD_") == false }
        env.merge(environment) { $1 }
        process.environment = env
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
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
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        return await waitForExit(timeout: timeout)
    }

    /// SIGKILL: no chance to clean up.
    public func kill9() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        _ = await waitForExit(timeout: .seconds(10))
    }

    public func waitForExit(timeout: Duration) async -> Int32 {
        _ = await eventually(timeout: timeout) { process.isRunning == false }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return process.terminationStatus
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
