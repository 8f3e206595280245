import Foundation
import Metrics

/// Lines to a file descriptor (stderr for logs, stdout for the console providers) that never stop or
/// kill the process.
///
/// `FileHandle.write` traps when the reader has gone (EPIPE: a log shipper restarting, a terminal
/// closing), and a blocking `write(2)` to a full pipe would stall whichever task logged. So callers only
/// append to a bounded queue; one thread per stream does the writing. A line that cannot be written
/// (closed pipe, any write error) or does not fit the queue (the reader is too slow) is dropped and
/// counted in `herald_log_lines_dropped_total{stream}`. SIGPIPE is ignored process-wide, so EPIPE arrives
/// as an error instead of a signal. Pending lines are flushed (for at most two seconds) at exit.
public final class LineOutput: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    /// Standard error: where logs go.
    public static let standardError = LineOutput(descriptor: STDERR_FILENO, stream: "stderr")
    /// Standard output: where the console providers print texts, mails and pushes.
    public static let standardOutput = LineOutput(descriptor: STDOUT_FILENO, stream: "stdout")

    private let descriptor: Int32
    private let stream: String
    private let capacity: Int
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var pendingLines = 0
    private var writing = false
    private var writerWaits = false
    private var started = false

    /// `capacity` bounds the bytes waiting to be written; beyond it new lines are dropped.
    public init(descriptor: Int32, stream: String, capacity: Int = 4 << 20) {
        self.descriptor = descriptor
        self.stream = stream
        self.capacity = capacity
    }

    /// Ignores SIGPIPE and arranges the exit flush; idempotent. Every executable calls it first thing.
    public static func installProcessWide() {
        _ = processSetUp
    }

    private static let processSetUp: Void = {
        signal(SIGPIPE, SIG_IGN)
        atexit { LineOutput.flushStandardStreams() }
    }()

    private static func flushStandardStreams() {
        standardError.flush(timeout: .seconds(2))
        standardOutput.flush(timeout: .seconds(2))
    }

    /// Queues `line` (a newline is added); never blocks on the descriptor.
    public func write(_ line: String) {
        enqueue(line.utf8)
    }

    /// Queues one line's bytes (a newline is added); never blocks on the descriptor.
    public func write(bytes line: [UInt8]) {
        enqueue(line)
    }

    private func enqueue<Bytes: Collection<UInt8>>(_ line: Bytes) {
        let byteCount = line.count + 1
        condition.lock()
        guard pending.count + byteCount <= capacity else {
            condition.unlock()
            dropped(1)
            return
        }
        pending.append(contentsOf: line)
        pending.append(UInt8(ascii: "\n"))
        pendingLines += 1
        if started == false {
            started = true
            let thread = Thread { [self] in writeLoop() }
            thread.name = "herald-\(stream)"
            thread.start()
        }
        // Woken only when it waits for lines: a writer still writing takes these with its next batch, so
        // a busy process does not wake it once per line. Broadcast, not signal: a flushing thread waits
        // on the same condition and must not take the wake-up.
        if writerWaits { condition.broadcast() }
        condition.unlock()
    }

    /// Waits until everything queued so far has been written or dropped, or `timeout` passed.
    public func flush(timeout: Duration) {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        while pending.isEmpty == false || writing {
            if condition.wait(until: deadline) == false { break }
        }
        condition.unlock()
    }

    private func writeLoop() {
        while true {
            condition.lock()
            while pending.isEmpty {
                writerWaits = true
                condition.wait()
            }
            writerWaits = false
            let batch = pending
            let lines = pendingLines
            pending.removeAll(keepingCapacity: true)
            pendingLines = 0
            writing = true
            condition.unlock()

            let written = Self.writeAll(batch, to: descriptor)
            if written < batch.count {
                // Lines not completely written are lost; a partial line ends the batch with a newline's
                // worth of garbage at worst, never a crash.
                let unwritten = batch[written...].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
                dropped(min(lines, unwritten))
            }

            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Writes `bytes` with as many `write(2)` calls as it takes; returns how many bytes went out before
    /// an error (EPIPE, EBADF, …) or a descriptor that stays unwritable for a second.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int {
        bytes.withUnsafeBytes { buffer -> Int in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            var stalls = 0
            while offset < buffer.count {
                let result = Foundation.write(descriptor, base + offset, buffer.count - offset)
                if result > 0 {
                    offset += result
                    stalls = 0
                    continue
                }
                if result < 0, errno == EINTR { continue }
                if result < 0, errno == EAGAIN || errno == EWOULDBLOCK, stalls < 10 {
                    // Someone made the descriptor non-blocking: wait a little for room, then give up.
                    var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&poller, 1, 100)
                    stalls += 1
                    continue
                }
                return offset
            }
            return offset
        }
    }

    private func dropped(_ lines: Int) {
        guard lines > 0 else { return }
        Counter(label: "herald_log_lines_dropped_total", dimensions: [("stream", stream)]).increment(by: lines)
    }
}
