import Foundation
import Synchronization

/// Runs `line` with /bin/sh, its output going to a temporary file, and waits; returns the output, or
/// throws with it when the status is not 0.
public func shell(_ line: String) async throws -> String {
    let log = NSTemporaryDirectory() + "herald-shell-\(UUID().uuidString.prefix(8)).log"
    let status = await shellStatus("(\(line)) > '\(log)' 2>&1")
    let output = FileManager.default.contents(atPath: log).map { String(decoding: $0, as: UTF8.self) } ?? ""
    try? FileManager.default.removeItem(atPath: log)
    guard status == 0 else { throw TestFailure("`\(line.prefix(300))` failed (status \(status)):\n\(output.suffix(3000))") }
    return output
}

/// Runs `/bin/sh -c line` (stdin, stdout and stderr /dev/null unless the line redirects them) and waits
/// for the shell only, not for daemons it leaves behind (scripts/broker.sh, scripts/postgres.sh), which
/// left Foundation's Process waiting on Linux; its exit status, 127 when it could not start.
///
/// Not system(): that hands the shell, and every daemon it starts, every descriptor of this process
/// not marked close-on-exec, and NIO marks none of its sockets. A broker started by one test then held
/// copies of other tests' in-process server connections for its whole life, so when a server closed
/// one, its client never saw the close (the health listener's idle-timeout test failed that way in
/// two of four full-suite runs). Here the child gets nothing beyond 0–2 (`SpawnedProcess`).
public func shellStatus(_ line: String) async -> Int32 {
    await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
        // A thread of its own: waiting for the shell must not hold a cooperative thread.
        Thread {
            let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(devNull) }
            let process = try? launches.withLock { _ in
                try SpawnedProcess(
                    path: "/bin/sh", arguments: ["-c", line], environment: ProcessInfo.processInfo.environment, stdout: devNull, stderr: devNull)
            }
            continuation.resume(returning: process?.exitStatus ?? 127)
        }.start()
    }
}

/// `text` quoted for /bin/sh.
public func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// Starts `process`, one launch at a time across the test process: Foundation's `Process.run` on Linux
/// was seen crashing (a bad pointer in its memcpy) while many tests launched processes at once.
public func launch(_ process: Process) throws {
    try launches.withLock { _ in try process.run() }
}

let launches = Mutex(())
