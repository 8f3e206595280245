import Foundation
import HeraldCore

extension SQLStore {
    public func breaker(provider: String) async throws -> StoredBreaker? {
        let rows = try await read { db in
            try db.query("SELECT state, version, updated_at_ms FROM provider_breakers WHERE provider = ?", [.text(provider)])
        }
        return try rows.first.map(Self.storedBreaker)
    }

    public func replaceBreaker(provider: String, snapshot: CircuitBreaker.Snapshot, expected: Int64?, now: Date) async throws -> Bool {
        let state = String(decoding: try JSONEncoder().encode(snapshot), as: UTF8.self)
        return try await run { db in
            if let expected {
                try db.query(
                    "UPDATE provider_breakers SET state = ?, version = version + 1, updated_at_ms = ? WHERE provider = ? AND version = ?",
                    [.text(state), .integer(now.millisecondsSince1970), .text(provider), .integer(expected)])
            } else {
                try db.query(
                    "INSERT INTO provider_breakers (provider, state, version, updated_at_ms) VALUES (?, ?, 1, ?) ON CONFLICT (provider) DO NOTHING",
                    [.text(provider), .text(state), .integer(now.millisecondsSince1970)])
            }
            return db.changes > 0
        }
    }

    public func breakers() async throws -> [String: StoredBreaker] {
        let rows = try await read { db in try db.query("SELECT state, version, updated_at_ms, provider FROM provider_breakers") }
        var result: [String: StoredBreaker] = [:]
        for row in rows {
            guard let provider = row[3].string else { continue }
            result[provider] = try Self.storedBreaker(row)
        }
        return result
    }

    private static func storedBreaker(_ row: [SQLValue]) throws -> StoredBreaker {
        let snapshot = try JSONDecoder().decode(CircuitBreaker.Snapshot.self, from: Data((row[0].string ?? "").utf8))
        return StoredBreaker(
            snapshot: snapshot, version: row[1].int ?? 0, updatedAt: Date(timeIntervalSince1970: Double(row[2].int ?? 0) / 1000))
    }
}
