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
        // Nothing else of the test process reaches the child: a pipe end another test holds (its stderr
        // pipe) must close when that test closes it, not stay open in an unrelated child.
        // It fails only where the C library lacks it (glibc before 2.34); the child then keeps them.
        _ = posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        // Signals as a process started from a shell gets them: none blocked, SIGPIPE not ignored. The
        // spawning thread is one of the test runner's, which blocks signals (a pgbench run with `-T`
        // waited for a SIGALRM that never came), and the runner ignores SIGPIPE (`LineOutput`).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, argv, envp)
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

// glibc functions Swift's Glibc module does not import (they need _GNU_SOURCE); both exist since glibc 2.34.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func posix_spawn_file_actions_addclosefrom_np(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// pipe(2) with O_CLOEXEC set atomically: no child spawned meanwhile inherits an end.
@_silgen_name("pipe2")
func pipe2(_ ends: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
