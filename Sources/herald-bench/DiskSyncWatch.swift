import Foundation
import HeraldCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How long the disk takes to make a small write durable while a run is under way: one 8 KiB `pwrite`
/// and `fdatasync` every 10 ms, on a thread of its own, in the scripts' state directory
/// (`HERALD_STATE_DIR`, default `.herald`, where `scripts/broker.sh` and `scripts/postgres.sh` keep
/// RabbitMQ's and PostgreSQL's data), or the temporary directory when there is none.
///
/// Every answer waits on such a sync (the broker's confirm, and on PostgreSQL the admission's commit
/// before it), and so does every claim and outcome of a draining worker, so a round that stands out can
/// be told apart: the disk stalled too, or it did not and the time went elsewhere. A hundred small syncs
/// a second is little beside the stores' own.
final class DiskSyncWatch: Sendable {
    struct Summary {
        var count: Int
        var p50: Double
        var p99: Double
        var max: Double

        /// Milliseconds, summarised; `nil` when nothing was measured.
        init?(milliseconds: [Double]) {
            guard let max = milliseconds.max() else { return nil }
            self.count = milliseconds.count
            self.p50 = Bench.percentile(milliseconds, 0.5)
            self.p99 = Bench.percentile(milliseconds, 0.99)
            self.max = max
        }

        var line: String {
            String(
                format: "    disk: 8 KiB write + fdatasync every 10 ms meanwhile: p50 %.2f ms, p99 %.1f ms, max %.1f ms (%d syncs)", p50, p99, max,
                count)
        }
    }

    private struct State {
        var running = true
        var samples: [Double] = []
        var failed = false
    }

    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    /// Starts measuring at once; `stop()` ends it. Nothing is measured if the file cannot be written.
    init() {
        let path = (Self.directory as NSString).appendingPathComponent("herald-bench-sync-\(UUID().uuidString.prefix(8))")
        let thread = Thread { [self] in
            defer { done.signal() }
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard descriptor >= 0 else { return state.withLock { $0.failed = true } }
            defer {
                close(descriptor)
                unlink(path)
            }
            let block = [UInt8](repeating: 0x5A, count: 8192)
            while state.withLock({ $0.running }) {
                let started = ContinuousClock.now
                let written = block.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
                guard written == block.count, fdatasync(descriptor) == 0 else { return state.withLock { $0.failed = true } }
                let took = (ContinuousClock.now - started).seconds * 1000
                state.withLock { $0.samples.append(took) }
                usleep(10_000)
            }
        }
        thread.name = "bench.disk-sync"
        thread.start()
    }

    /// The stores' directory when the scripts made one (a temporary directory may be memory).
    static var directory: String {
        let state = ProcessInfo.processInfo.environment["HERALD_STATE_DIR"] ?? ".herald"
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: state, isDirectory: &isDirectory) && isDirectory.boolValue ? state : NSTemporaryDirectory()
    }

    /// Stops the thread (waiting for its last sync) and summarises what it measured.
    func stop() -> Summary? {
        let wasRunning = state.withLock { state in
            defer { state.running = false }
            return state.running
        }
        guard wasRunning else { return nil }
        done.wait()
        return state.withLock { $0.failed ? nil : Summary(milliseconds: $0.samples) }
    }
}
