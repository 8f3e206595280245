import Foundation

/// A SQLite file of its own under the temporary directory for one test, removed with its WAL and
/// shared-memory files by `remove()` (called from the test's `defer`).
struct ScratchSQLiteFile {
    let path: String

    init(_ name: String) {
        path = NSTemporaryDirectory() + "herald-\(name)-\(UUID().uuidString.prefix(8)).sqlite"
    }

    func remove() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}
