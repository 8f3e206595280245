import Foundation

/// Runs `work` on a thread of its own and waits for it without holding a thread of Swift's cooperative
/// pool. That pool has one thread per core (two here): blocking work on it (disk writes with fsync,
/// key derivation) stops every other task of the process for as long, timers and servers included.
/// For occasional work only (opening a store, hashing a password): each call starts a thread.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
