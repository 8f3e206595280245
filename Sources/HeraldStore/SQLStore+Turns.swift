import Foundation
import HeraldCore

extension SQLStore {
    /// One upsert: a new turn is inserted; a held one changes hands only when its time passed or it is
    /// already `holder`'s. Two processes trying at once queue on the row (PostgreSQL's row lock,
    /// SQLite's write lock) and the second sees the first's holder, so only one gets it.
    public func takeTurn(_ name: String, holder: String, until: Int64, now: Int64) async throws -> Bool {
        try await run { db in
            try db.query(
                """
                INSERT INTO turns (name, holder, until_ms) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
                WHERE turns.holder = excluded.holder OR turns.until_ms <= ?
                """, [.text(name), .text(holder), .integer(until), .integer(now)])
            return db.changes > 0
        }
    }

    public func endTurn(_ name: String, holder: String) async throws {
        try await run { db in
            try db.query("DELETE FROM turns WHERE name = ? AND holder = ?", [.text(name), .text(holder)])
        }
    }

    public func turnHolder(_ name: String) async throws -> (holder: String, until: Int64)? {
        let rows = try await read { db in try db.query("SELECT holder, until_ms FROM turns WHERE name = ?", [.text(name)]) }
        guard let row = rows.first, let holder = row[0].string, let until = row[1].int else { return nil }
        return (holder, until)
    }
}
