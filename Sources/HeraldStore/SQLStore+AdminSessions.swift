import Foundation
import HeraldCore

extension SQLStore {
    public func insertAdminSession(hash: String, keyID: String, expiresAt: Date) async throws {
        try await run { db in
            try db.query(
                "INSERT INTO admin_sessions (session_hash, key_id, expires_at_ms) VALUES (?, ?, ?)",
                [.text(hash), .text(keyID), .integer(expiresAt.millisecondsSince1970)])
        }
    }

    public func adminSession(hash: String, now: Date) async throws -> String? {
        let rows = try await read { db in
            try db.query(
                "SELECT key_id FROM admin_sessions WHERE session_hash = ? AND expires_at_ms > ?", [.text(hash), .integer(now.millisecondsSince1970)])
        }
        return rows.first?[0].string
    }

    public func deleteAdminSession(hash: String) async throws -> Bool {
        try await run { db in
            try db.query("DELETE FROM admin_sessions WHERE session_hash = ?", [.text(hash)])
            return db.changes > 0
        }
    }

    public func purgeAdminSessions(expiredBefore date: Date, limit: Int) async throws -> Int {
        try await purgeExpired("admin_sessions", key: "session_hash", by: "expires_at_ms", before: date, limit: limit)
    }
}
