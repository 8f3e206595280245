import Foundation
import Synchronization

/// A child process started with posix_spawn: argv and the environment are built here, its stdin is
/// /dev/null and its stdout and stderr go to the descriptors given. Foundation's `Process.run` crashed
/// (a bad pointer in its memcpy) a few times a day while the suite launched processes.
final class SpawnedProcess: Sendable {
    let pid: pid_t
    /// The exit status once reaped (128 + signal for a signal), nil while running.
    private let status = Mutex<Int32?>(nil)

    init(path: String, arguments: [String], environment: [String: String], stdout: Int32, stderr: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, nil, argv, envp)
        guard result == 0 else { throw TestFailure("posix_spawn \(path) failed: \(String(cString: strerror(result)))") }
        pid = child
    }

    /// Reaps the child when it has exited (never blocks).
    var isRunning: Bool {
        status.withLock { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            return false
        }
    }

    /// The exit status (waits for the exit).
    var exitStatus: Int32 {
        while isRunning { usleep(10_000) }
        return status.withLock { $0 ?? -1 }
    }
}
