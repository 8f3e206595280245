import Foundation
import HeraldCore

/// Copies every table of one store into another (`herald-admin store copy`, e.g. from the SQLite file
/// of a single machine into PostgreSQL when Herald moves to several). Both stores have the same
/// schema version and columns, so rows move as they are, in primary-key order, one transaction per
/// batch on the target. Rows the target already has (same primary key) are left alone: running the copy
/// again, or after a partial run, inserts only what is missing.
extension SQLStore {
    /// One table's outcome.
    public struct CopiedTable: Sendable, Equatable {
        public var table: String
        /// Rows read from the source.
        public var rows: Int
        /// Rows the target did not have yet.
        public var inserted: Int

        public init(table: String, rows: Int, inserted: Int) {
            self.table = table
            self.rows = rows
            self.inserted = inserted
        }
    }

    /// Primary-key columns per table, for a stable order.
    static let primaryKeys: [String: [String]] = [
        "users": ["project_id", "local_id"], "mfa_enrollments": ["project_id", "local_id", "enrollment_id"],
        "refresh_tokens": ["token_hash"], "verification_sessions": ["id"], "oob_codes": ["code_hash"], "deliveries": ["job_id"],
        "rate_limits": ["key"], "prefix_velocity": ["project_id", "prefix"], "prefix_blocks": ["project_id", "prefix"],
        "app_receipts": ["receipt_hash"], "invalid_device_tokens": ["token_hash"],
        "federated_identities": ["project_id", "provider_id", "federated_id"], "idp_credentials": ["credential_hash"],
    ]

    /// Copies every table into `target` (both migrated to the same version), reporting progress after
    /// each batch.
    public func copy(
        to target: SQLStore, batchSize: Int = 500, progress: @Sendable (_ table: String, _ copied: Int, _ total: Int) -> Void = { _, _, _ in }
    ) async throws -> [CopiedTable] {
        // The source counted exactly (the copy reads every row anyway), the target only asked its version.
        let (sourceStatus, targetStatus) = (try await status(rows: .exact), try await target.status(rows: .none))
        guard sourceStatus.version == targetStatus.version, sourceStatus.version == Migrations.latestVersion else {
            throw StoreError(
                .failed,
                "both stores must be at schema version \(Migrations.latestVersion) (source \(sourceStatus.version), target \(targetStatus.version))")
        }
        var results: [CopiedTable] = []
        for table in Migrations.tables {
            // The source is read beside its writers (a running installation's sends go on).
            let columns = try await read { db in try Self.columns(of: table, db) }
            let keys = Self.primaryKeys[table] ?? columns
            let total = sourceStatus.rows.first { $0.table == table }?.rows ?? 0
            // Each batch starts after the last key read (`OFFSET` would read every earlier row again:
            // quadratic in the table).
            let order = keys.joined(separator: ", ")
            let keyPositions = keys.compactMap { columns.firstIndex(of: $0) }
            let firstSQL = "SELECT \(columns.joined(separator: ", ")) FROM \(table) ORDER BY \(order) LIMIT ?"
            let nextSQL =
                "SELECT \(columns.joined(separator: ", ")) FROM \(table) WHERE (\(order)) > (\(keys.map { _ in "?" }.joined(separator: ", "))) ORDER BY \(order) LIMIT ?"
            let insertSQL =
                "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", "))) ON CONFLICT DO NOTHING"
            var copied = 0
            var inserted = 0
            var after: [SQLValue]?
            while true {
                let (sql, bindings) = after.map { (nextSQL, $0 + [.integer(Int64(batchSize))]) } ?? (firstSQL, [.integer(Int64(batchSize))])
                let batch = try await read { db in try db.query(sql, bindings) }
                guard let last = batch.last else { break }
                after = keyPositions.map { last[$0] }
                inserted += try await target.run { db in
                    try db.transaction {
                        var new = 0
                        for row in batch {
                            try db.query(insertSQL, row)
                            new += db.changes
                        }
                        return new
                    }
                }
                copied += batch.count
                progress(table, copied, total)
                if batch.count < batchSize { break }
            }
            results.append(CopiedTable(table: table, rows: copied, inserted: inserted))
        }
        return results
    }

    /// A table's columns in their declared order.
    static func columns(of table: String, _ db: any SQLConnection) throws -> [String] {
        switch db.dialect {
        case .sqlite:
            return try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).compactMap { $0.first?.string }
        case .postgres:
            return try db.query(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
                [.text(table)]
            ).compactMap { $0.first?.string }
        }
    }
}
