import Foundation
import HeraldCore
import Testing

@testable import HeraldStore

/// A write that waited out the busy timeout for another connection's lock is the store being
/// unavailable for now (answered 503 with Retry-After), not a failed statement (answered 500).
@Suite("SQLite: a lock held past the busy timeout")
struct SQLiteBusyTests {
    @Test("a write transaction and a lone write both fail as unavailable while another connection holds the lock")
    func busyIsUnavailable() throws {
        let file = ScratchSQLiteFile("busy")
        defer { file.remove() }
        let holder = try SQLiteConnection(path: file.path, synchronous: .normal)
        try holder.execute("CREATE TABLE t (x INTEGER)")
        let waiter = try SQLiteConnection(path: file.path, synchronous: .normal, busyTimeout: .milliseconds(50))
        try holder.execute("BEGIN IMMEDIATE")
        for statement in ["BEGIN IMMEDIATE", "INSERT INTO t VALUES (1)"] {
            do {
                try waiter.execute(statement)
                Issue.record("\(statement) ran while another connection held the write lock")
            } catch let error as StoreError {
                #expect(error.kind == .unavailable, "\(statement): \(error)")
            }
        }
        try holder.execute("COMMIT")
        // Once the lock is free the same connection writes again.
        try waiter.execute("INSERT INTO t VALUES (2)")
        #expect(try holder.query("SELECT count(*) FROM t", []).first?.first?.int == 1)
    }

    @Test("a broken statement still fails as failed")
    func otherErrorsStayFailed() throws {
        let file = ScratchSQLiteFile("busy")
        defer { file.remove() }
        let connection = try SQLiteConnection(path: file.path, synchronous: .normal)
        let error = #expect(throws: StoreError.self) { try connection.execute("INSERT INTO missing VALUES (1)") }
        #expect(error?.kind == .failed)
    }
}
