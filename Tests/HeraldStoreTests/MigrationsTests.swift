import Foundation
import HeraldTesting
import Testing

@testable import HeraldStore

@Suite("Schema steps for PostgreSQL")
struct MigrationsTests {
    /// What the word replacement must equal: a regular expression with word boundaries, as it was done before.
    static func byRegex(_ word: String, _ replacement: String, _ text: String) -> String {
        text.replacingOccurrences(of: "\\b\(word)\\b", with: replacement, options: .regularExpression)
    }

    @Test("every migration step and edge texts translate exactly as word-boundary regular expressions translate them")
    func wordReplacementMatchesRegex() {
        let edges = [
            "INTEGER", "xINTEGER", "INTEGERx", "INTEGER_", "_INTEGER", "a INTEGER,", "(INTEGER)", "INTEGERINTEGER", "INTEGER INTEGER", "",
            "REAL REALLY UNREAL", "BLOB\nBLOBS", "1INTEGER", "INTEGER1", "é INTEGER é", "TEXT, TEXTS, CONTEXT",
        ]
        for text in Migrations.sqliteSteps + edges {
            var expected = text.replacingOccurrences(of: " WITHOUT ROWID", with: "")
            for (from, to) in [("INTEGER", "BIGINT"), ("REAL", "DOUBLE PRECISION"), ("BLOB", "BYTEA"), ("TEXT", "TEXT COLLATE \"C\"")] {
                expected = Self.byRegex(from, to, expected)
            }
            #expect(Migrations.postgresDDL(text) == expected, "\(text.prefix(80))")
        }
        #expect(
            Migrations.postgresDDL("CREATE TABLE t (a INTEGER, b REAL, c BLOB, d TEXT NOT NULL) WITHOUT ROWID")
                == "CREATE TABLE t (a BIGINT, b DOUBLE PRECISION, c BYTEA, d TEXT COLLATE \"C\" NOT NULL)")
    }
}

/// Herald's text columns on PostgreSQL compare byte by byte (`COLLATE "C"`) whatever the database's
/// locale: fresh schemas from the derived steps, schemas from before version 11 by that step.
@Suite("Schema on PostgreSQL", .timeLimit(.minutes(1)))
struct PostgresSchemaTests {
    /// Text columns of Herald's tables in the current schema whose collation is not "C".
    static let notBytewise = """
        SELECT c.relname || '.' || a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
        LEFT JOIN pg_collation co ON co.oid = a.attcollation
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
          AND a.atttypid = 'text'::regtype AND co.collname IS DISTINCT FROM 'C'
        ORDER BY 1
        """

    @Test("a fresh schema's text columns are all COLLATE \"C\"")
    func freshSchema() async throws {
        let (store, url, _) = try await PostgresRoutinesTests.freshStore(migrate: true)
        let columns = try await store.run { db in
            (
                try db.query(
                    "SELECT count(*) FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid WHERE c.relnamespace = current_schema()::regnamespace AND a.atttypid = 'text'::regtype AND a.attnum > 0"
                ).first?.first?.int ?? 0, try db.query(Self.notBytewise).compactMap { $0.first?.string }
            )
        }
        #expect(columns.0 > 40, "text columns found: \(columns.0)")
        #expect(columns.1 == [])
        await store.close()
        await TestStore.dropSchema(of: url)
    }

    /// A schema migrated to version 10 by an earlier Herald (text columns in the database's default
    /// collation, rows in them) comes out of step 11 with every text column bytewise, its rows found
    /// through the rebuilt indexes, and nothing of another application's touched.
    @Test("step 11 turns an older schema's text columns bytewise, keeps the rows and leaves other tables alone")
    func upgradeFromVersion10() async throws {
        let (store, url, schema) = try await PostgresRoutinesTests.freshStore(migrate: false)
        let name = try #require(schema)
        let outcome = try await store.run { db -> (before: [String], applied: [Int], after: [String], found: [[SQLValue]]) in
            try db.transaction {
                try db.query("CREATE SCHEMA \"\(name)\"")
                try db.query("CREATE TABLE herald_schema_version (version BIGINT NOT NULL)")
                try db.query("INSERT INTO herald_schema_version (version) VALUES (10)")
                for step in Migrations.sqliteSteps.prefix(10) {
                    try db.execute(Migrations.postgresDDL(step).replacingOccurrences(of: " COLLATE \"C\"", with: ""))
                }
                try db.query("CREATE TABLE operators_notes (note TEXT PRIMARY KEY)")
                try db.query(
                    "INSERT INTO deliveries (job_id, project_id, type, destination, status, created_at_ms, updated_at_ms) VALUES ('a-job', 'p', 'sms', '+15550001', 'pending', 1, 1), ('B-job', 'p', 'sms', '+15550002', 'sent', 2, 2)"
                )
                try db.query("INSERT INTO rate_limits (key, tat_us) VALUES ('number:p:+15550001|5/1h', 7)")
            }
            let before = try db.query(Self.notBytewise).compactMap { $0.first?.string }
            let applied = try Migrations.migrate(db)
            let after = try db.query(Self.notBytewise).compactMap { $0.first?.string }
            let found = try db.query(
                "SELECT d.job_id, r.tat_us FROM deliveries d, rate_limits r WHERE d.job_id = 'a-job' AND r.key = 'number:p:+15550001|5/1h'")
            return (before, applied, after, found)
        }
        #expect(outcome.before.contains("deliveries.job_id") && outcome.before.contains("rate_limits.key"), "\(outcome.before)")
        #expect(outcome.applied == Array(11...Migrations.latestVersion))
        // The operator's own table keeps its collation; every one of Herald's columns changed.
        #expect(outcome.after == ["operators_notes.note"])
        #expect(outcome.found == [[.text("a-job"), .integer(7)]])
        let order = try await store.run { db in try db.query("SELECT job_id FROM deliveries ORDER BY job_id").compactMap { $0.first?.string } }
        // Byte order, as SQLite's: upper case first (a language's order, en_US.UTF-8, puts "a-job" first).
        #expect(order == ["B-job", "a-job"])
        await store.close()
        await TestStore.dropSchema(of: url)
    }
}
