import Foundation
import HeraldCore
import Logging

extension SQLStore {
    /// Opens the store `configuration` names and (with `migrate`, as every process does at start-up)
    /// brings its schema up to date: SQLite at once; PostgreSQL retried with backoff for
    /// `connectTimeout` (a host may start before the database), then the error.
    public static func open(_ configuration: StoreSettings, migrate: Bool = true, logger: Logger) async throws -> SQLStore {
        switch configuration.location {
        case .sqlite(let path):
            // Opening writes (WAL set-up, migrations) and fsyncs: not on the cooperative pool, where a
            // test process opening dozens of stores at once stalled every other task for seconds.
            let synchronous = configuration.synchronous
            return try await onOwnThread { try SQLStore(sqlitePath: path, migrate: migrate, synchronous: synchronous) }
        case .postgres(let location):
            let backend = try PostgresBackend(
                location: location, poolSize: configuration.poolSize, caFile: configuration.caFile,
                leaseTimeout: configuration.connectTimeout, logger: logger)
            let store = SQLStore(backend: backend)
            let deadline = ContinuousClock.now + configuration.connectTimeout
            var pause = Duration.milliseconds(100)
            while true {
                do {
                    let applied = migrate ? try await store.migrate(schema: location.schema) : try await store.ping()
                    if applied.isEmpty == false {
                        logger.notice("store: migrated", metadata: ["versions": "\(applied)", "store": "\(location.redacted)"])
                    }
                    return store
                } catch let error as StoreError where error.kind == .unavailable && ContinuousClock.now + pause < deadline {
                    logger.warning("store: PostgreSQL not reachable yet, retrying", metadata: ["error": "\(error.message)"])
                    try await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(2))
                } catch {
                    await store.close()
                    throw error
                }
            }
        }
    }

    /// Applies missing schema versions (PostgreSQL: under an advisory lock, creating `schema` first);
    /// returns the versions applied.
    @discardableResult
    public func migrate(schema: String? = nil) async throws -> [Int] {
        try await run { db in
            if let schema, db.dialect == .postgres {
                try db.transaction {
                    try db.lock("herald-schema:\(schema)")
                    try db.execute("CREATE SCHEMA IF NOT EXISTS \(schema)")
                }
            }
            return try Migrations.migrate(db)
        }
    }

    /// Proves the database answers (returns no versions, like a migration with nothing to do).
    func ping() async throws -> [Int] {
        try await run { db in
            try db.query("SELECT 1")
            return []
        }
    }

    /// How `status` counts each table's rows.
    public enum RowCounts: Sendable {
        /// Not at all (`store migrate` wants only the version).
        case none
        /// PostgreSQL's own running count of live rows (`pg_stat_user_tables`), read in milliseconds
        /// however large the tables; exact counts on SQLite, which keeps none.
        case estimated
        /// `count(*)` of every table: a scan of each. On PostgreSQL it holds a snapshot while it lasts,
        /// minutes on a large ledger (0.3–0.7 s for 3 million rows held in memory), and the rows every
        /// send updates grow their chains meanwhile (`StoreHealth`).
        case exact
    }

    /// What `herald-admin store status` prints: backend, schema version (and the newest this build
    /// knows), rows per table. The counts are read beside the writer: on SQLite a call of the writer's
    /// batches would hold the database's write lock, every process's sends, while it lasts.
    public func status(rows counting: RowCounts = .exact) async throws -> StoreStatus {
        // Asked of the writing connection: the reader's setting says nothing about commits.
        let durability = try await run { db in try Self.durability(db) }
        return try await read { db in
            let version = try Migrations.version(db)
            let estimated = counting == .estimated && db.dialect == .postgres
            var rows: [(table: String, rows: Int)] = []
            if version > 0, counting != .none {
                if estimated {
                    let live = Dictionary(
                        try db.query("SELECT relname, n_live_tup FROM pg_stat_user_tables WHERE schemaname = current_schema()").compactMap {
                            row -> (String, Int)? in
                            guard let table = row[0].string, let count = row[1].int else { return nil }
                            return (table, Int(count))
                        }, uniquingKeysWith: { first, _ in first })
                    rows = Migrations.tables.map { ($0, live[$0] ?? 0) }
                } else {
                    for table in Migrations.tables {
                        rows.append((table, Int(try db.query("SELECT count(*) FROM \(table)").first?.first?.int ?? 0)))
                    }
                }
            }
            return StoreStatus(
                backend: db.dialect, version: version, latest: Migrations.latestVersion, rows: rows, rowsEstimated: estimated, durability: durability)
        }
    }

    /// SQLite's `synchronous` on this connection (`store.synchronous`), or PostgreSQL's
    /// `synchronous_commit` (the server's).
    static func durability(_ db: any SQLConnection) throws -> String {
        switch db.dialect {
        case .sqlite:
            let level = try db.query("PRAGMA synchronous").first?.first?.int
            let names: [Int64: String] = [0: "off", 1: "normal", 2: "full", 3: "extra"]
            return "synchronous=" + (level.flatMap { names[$0] } ?? "unknown")
        case .postgres:
            return "synchronous_commit=" + (try db.query("SHOW synchronous_commit").first?.first?.string ?? "unknown")
        }
    }
}

extension SQLStore {
    /// PostgreSQL's connections that hold back the cleanup of Herald's tables: those on this database
    /// with a snapshot (`backend_xmin`), and walsenders of replicas that report theirs. Another role's
    /// sessions show their start times only to a role with `pg_read_all_stats`
    /// (deploy/postgres/herald.sql grants it); without, such a holder shows with 0 seconds.
    public func oldestSnapshot() async throws -> SnapshotHolder? {
        guard dialect == .postgres else { return nil }
        let rows = try await run { db in
            try db.query(
                """
                SELECT COALESCE(EXTRACT(EPOCH FROM (clock_timestamp() - COALESCE(xact_start, query_start, backend_start)))::float8, 0),
                  COALESCE(NULLIF(application_name, ''), backend_type, ''), COALESCE(state, ''), pid
                FROM pg_stat_activity
                WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid() AND (datname = current_database() OR backend_type = 'walsender')
                ORDER BY 1 DESC LIMIT 1
                """)
        }
        guard let row = rows.first, let seconds = row[0].double, let pid = row[3].int else { return nil }
        return SnapshotHolder(seconds: seconds, application: row[1].string ?? "", state: row[2].string ?? "", pid: Int(pid))
    }
}

/// A store's shape and size, for operators.
public struct StoreStatus: Sendable {
    public var backend: SQLDialect
    public var version: Int
    public var latest: Int
    public var rows: [(table: String, rows: Int)]
    /// The counts are PostgreSQL's estimates (`SQLStore.RowCounts.estimated`), not counted.
    public var rowsEstimated: Bool
    /// When a commit counts as done: `synchronous=full` or `normal` on SQLite (`store.synchronous`),
    /// PostgreSQL's `synchronous_commit` (`off` loses the last commits in a crash).
    public var durability: String
}

extension SQLStore {
    /// Drops a PostgreSQL schema and everything in it (test clean-up; `herald-admin` never calls it).
    public func dropSchema(_ schema: String) async throws {
        guard StoreLocation.isIdentifier(schema) else { throw StoreError(.failed, "not a schema name") }
        try await run { db in try db.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE") }
    }
}
