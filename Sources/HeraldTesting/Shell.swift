import Foundation
import Synchronization

/// Runs `line` with /bin/sh, its output going to a temporary file, and waits; returns the output, or
/// throws with it when the status is not 0. system() rather than Process: scripts that daemonize
/// (scripts/broker.sh, scripts/postgres.sh) left Foundation's Process waiting on Linux.
public func shell(_ line: String) async throws -> String {
    let log = NSTemporaryDirectory() + "herald-shell-\(UUID().uuidString.prefix(8)).log"
    let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
        Thread { continuation.resume(returning: system("(\(line)) > '\(log)' 2>&1 < /dev/null")) }.start()
    }
    let output = FileManager.default.contents(atPath: log).map { String(decoding: $0, as: UTF8.self) } ?? ""
    try? FileManager.default.removeItem(atPath: log)
    guard status == 0 else { throw TestFailure("`\(line.prefix(300))` failed (status \(status)):\n\(output.suffix(3000))") }
    return output
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
