import Foundation

/// Schema versions, applied in order. Both backends have the same versions with the same tables,
/// columns and indexes: the steps are written once, for SQLite, and PostgreSQL's are derived from them
/// (`postgresDDL`).
///
/// SQLite records the version in `PRAGMA user_version`; PostgreSQL in `herald_schema_version`, changed
/// only under a transaction-scoped advisory lock, so ten processes starting at once apply each step once.
public enum Migrations {
    /// The newest schema version this build knows.
    public static var latestVersion: Int { sqliteSteps.count }
    /// The version that made the `turns` table (`TurnStore`).
    public static let turnsVersion = 12

    static let sqliteSteps: [String] = [
        // 1: sessions, accounts, refresh tokens, delivery ledger.
        """
        CREATE TABLE verification_sessions (
          id TEXT PRIMARY KEY,
          project_id TEXT NOT NULL,
          phone_number TEXT NOT NULL,
          code_hash BLOB NOT NULL,
          created_at_ms INTEGER NOT NULL,
          expires_at_ms INTEGER NOT NULL,
          attempts INTEGER NOT NULL DEFAULT 0,
          max_attempts INTEGER NOT NULL,
          consumed_at_ms INTEGER,
          job_id TEXT
        );
        CREATE INDEX verification_sessions_expiry ON verification_sessions (expires_at_ms);
        CREATE TABLE users (
          local_id TEXT NOT NULL,
          project_id TEXT NOT NULL,
          phone_number TEXT,
          created_at_ms INTEGER NOT NULL,
          last_login_at_ms INTEGER NOT NULL,
          valid_since_ms INTEGER,
          disabled INTEGER NOT NULL DEFAULT 0,
          PRIMARY KEY (project_id, local_id)
        );
        CREATE UNIQUE INDEX users_phone ON users (project_id, phone_number) WHERE phone_number IS NOT NULL;
        CREATE TABLE refresh_tokens (
          token_hash TEXT PRIMARY KEY,
          project_id TEXT NOT NULL,
          local_id TEXT NOT NULL,
          provider TEXT NOT NULL,
          created_at_ms INTEGER NOT NULL
        );
        CREATE TABLE deliveries (
          job_id TEXT PRIMARY KEY,
          project_id TEXT NOT NULL,
          type TEXT NOT NULL,
          destination TEXT NOT NULL,
          status TEXT NOT NULL,
          owner TEXT,
          attempts INTEGER NOT NULL DEFAULT 0,
          reason TEXT,
          created_at_ms INTEGER NOT NULL,
          updated_at_ms INTEGER NOT NULL
        );
        CREATE INDEX deliveries_status ON deliveries (status, updated_at_ms);
        """,
        // 2: rate limits (GCRA, microseconds), prefix velocity and blocks, region per session.
        """
        CREATE TABLE rate_limits (
          key TEXT PRIMARY KEY,
          tat_us INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX rate_limits_tat ON rate_limits (tat_us);
        CREATE TABLE prefix_velocity (
          project_id TEXT NOT NULL,
          prefix TEXT NOT NULL,
          window_start_us INTEGER NOT NULL,
          count INTEGER NOT NULL,
          baseline REAL NOT NULL,
          PRIMARY KEY (project_id, prefix)
        ) WITHOUT ROWID;
        CREATE TABLE prefix_blocks (
          project_id TEXT NOT NULL,
          prefix TEXT NOT NULL,
          until_us INTEGER NOT NULL,
          reason TEXT NOT NULL,
          created_us INTEGER NOT NULL,
          PRIMARY KEY (project_id, prefix)
        ) WITHOUT ROWID;
        ALTER TABLE verification_sessions ADD COLUMN region TEXT NOT NULL DEFAULT '';
        CREATE INDEX verification_sessions_created ON verification_sessions (created_at_ms);
        """,
        // 3: SMS segments per message; app verification (receipts, invalid device tokens); reentrant sends.
        """
        ALTER TABLE deliveries ADD COLUMN segments INTEGER;
        ALTER TABLE deliveries ADD COLUMN encoding TEXT;
        CREATE TABLE app_receipts (
          receipt_hash TEXT PRIMARY KEY,
          project_id TEXT NOT NULL,
          bundle_id TEXT NOT NULL,
          secret_hash TEXT NOT NULL,
          device_token_hash TEXT NOT NULL,
          created_at_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX app_receipts_created ON app_receipts (created_at_ms);
        CREATE TABLE invalid_device_tokens (
          token_hash TEXT PRIMARY KEY,
          reason TEXT NOT NULL,
          invalid_since_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        ALTER TABLE verification_sessions ADD COLUMN session_info_sealed TEXT;
        ALTER TABLE verification_sessions ADD COLUMN client_key TEXT;
        ALTER TABLE verification_sessions ADD COLUMN credential_hash TEXT;
        CREATE INDEX verification_sessions_phone ON verification_sessions (project_id, phone_number, created_at_ms);
        """,
        // 4: email accounts, email action codes, second factors; session purpose.
        """
        ALTER TABLE users ADD COLUMN email TEXT;
        ALTER TABLE users ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE users ADD COLUMN password_hash TEXT;
        ALTER TABLE users ADD COLUMN display_name TEXT;
        ALTER TABLE users ADD COLUMN email_link_signin INTEGER NOT NULL DEFAULT 0;
        CREATE UNIQUE INDEX users_email ON users (project_id, email) WHERE email IS NOT NULL;
        CREATE TABLE mfa_enrollments (
          project_id TEXT NOT NULL,
          local_id TEXT NOT NULL,
          enrollment_id TEXT NOT NULL,
          phone_number TEXT NOT NULL,
          display_name TEXT,
          enrolled_at_ms INTEGER NOT NULL,
          PRIMARY KEY (project_id, local_id, enrollment_id)
        ) WITHOUT ROWID;
        CREATE TABLE oob_codes (
          code_hash TEXT PRIMARY KEY,
          project_id TEXT NOT NULL,
          request_type TEXT NOT NULL,
          email TEXT NOT NULL,
          created_at_ms INTEGER NOT NULL,
          expires_at_ms INTEGER NOT NULL,
          consumed_at_ms INTEGER,
          job_id TEXT,
          link_sealed TEXT
        ) WITHOUT ROWID;
        CREATE INDEX oob_codes_expiry ON oob_codes (expires_at_ms);
        ALTER TABLE verification_sessions ADD COLUMN purpose TEXT NOT NULL DEFAULT 'signIn';
        ALTER TABLE verification_sessions ADD COLUMN code_sealed TEXT;
        """,
        // 5: `verified` tells the session that signed in from those its sign-in closed (a resend no
        // longer ends the number's older sessions; the first of them to sign in ends the rest). And no
        // index on rate_limits.tat_us: every send moves six keys' tat, and each move rewrote an entry of
        // this index too (on PostgreSQL it also ruled out HOT updates); housekeeping's purge walks the
        // primary key in chunks instead (`SQLStore.purgeRates`, `RateKeySweep`).
        """
        DROP INDEX rate_limits_tat;
        ALTER TABLE verification_sessions ADD COLUMN verified INTEGER NOT NULL DEFAULT 0;
        UPDATE verification_sessions SET verified = 1 WHERE consumed_at_ms IS NOT NULL;
        """,
        // 6: the message ledger operators read: what the worker knew (template, locale, provider,
        // producer), the provider's message id, and each transition as a line in `events`
        // (`MessageEvent.storedLine`; appending is one concatenation in the UPDATE that changes the
        // status, so it costs no extra statement or index entry). Listings by destination and by age.
        """
        ALTER TABLE deliveries ADD COLUMN template TEXT;
        ALTER TABLE deliveries ADD COLUMN locale TEXT;
        ALTER TABLE deliveries ADD COLUMN provider TEXT;
        ALTER TABLE deliveries ADD COLUMN provider_message_id TEXT;
        ALTER TABLE deliveries ADD COLUMN producer TEXT;
        ALTER TABLE deliveries ADD COLUMN events TEXT;
        CREATE INDEX deliveries_destination ON deliveries (destination, created_at_ms);
        CREATE INDEX deliveries_created ON deliveries (created_at_ms);
        """,
        // 7: the job of an `uncertain` message, as published (its code sealed to the job and number), kept
        // until an operator resolves it (`herald-admin messages resolve --sent | --resend`).
        """
        ALTER TABLE deliveries ADD COLUMN job_body BLOB;
        """,
        // 8: Sign in with Apple. An identity-provider account belongs to one user of a project (primary
        // key) and a user has at most one account per provider (`federated_identities_user`); identity
        // tokens already used are kept by hash until they expire, so a replay is refused everywhere.
        """
        CREATE TABLE federated_identities (
          project_id TEXT NOT NULL,
          provider_id TEXT NOT NULL,
          federated_id TEXT NOT NULL,
          local_id TEXT NOT NULL,
          email TEXT,
          email_verified INTEGER NOT NULL DEFAULT 0,
          private_email INTEGER NOT NULL DEFAULT 0,
          display_name TEXT,
          linked_at_ms INTEGER NOT NULL,
          PRIMARY KEY (project_id, provider_id, federated_id)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX federated_identities_user ON federated_identities (project_id, local_id, provider_id);
        CREATE TABLE idp_credentials (
          credential_hash TEXT PRIMARY KEY,
          project_id TEXT NOT NULL,
          expires_at_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX idp_credentials_expiry ON idp_credentials (expires_at_ms);
        """,
        // 9: custom claims an admin set (firebase-admin `set_custom_user_claims`), as their JSON object.
        """
        ALTER TABLE users ADD COLUMN custom_attributes TEXT;
        """,
        // 10: the number was proven by a real SMS code (a test number's fixed code never signs into such an
        // account). Accounts from before cannot tell, so every one with a number counts as proven.
        """
        ALTER TABLE users ADD COLUMN phone_proven INTEGER NOT NULL DEFAULT 0;
        UPDATE users SET phone_proven = 1 WHERE phone_number IS NOT NULL;
        """,
        // 11: texts compared byte by byte. SQLite always has: nothing to do; PostgreSQL runs
        // `postgresTextCollation` instead (`postgresOverrides`).
        """
        -- 11: nothing for SQLite.
        """,
        // 12: turns one process at a time holds (`TurnStore`): which herald-api runs housekeeping.
        """
        CREATE TABLE turns (
          name TEXT PRIMARY KEY,
          holder TEXT NOT NULL,
          until_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 13: the sessions' creation-time index goes. Every send inserted an entry into it, one of the
        // five B-trees a session writes, and only the conversion report read it; a session's id starts
        // with its creation time (`SessionToken`), so the report reads that range of the primary key
        // instead. About 1 % of herald-api's user-space instructions per send on SQLite.
        """
        DROP INDEX verification_sessions_created;
        """,
        // 14: the status page's login sessions (`AdminSessionStore`), so logging out ends a session on
        // every herald-api. Not copied between stores: an operator logs in again.
        """
        CREATE TABLE admin_sessions (
          session_hash TEXT PRIMARY KEY,
          key_id TEXT NOT NULL,
          expires_at_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at_ms);
        """,
        // 15: each SMS provider's circuit breaker (`BreakerStore`), shared by every sms worker; `state`
        // is the breaker's snapshot as JSON, `version` what a writer must find to replace it. Not copied
        // between stores: the counts are of the last seconds, and an operator's hold is set again.
        """
        CREATE TABLE provider_breakers (
          provider TEXT PRIMARY KEY,
          state TEXT NOT NULL,
          version INTEGER NOT NULL,
          updated_at_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 16: the segments of a long SMS whose receipts said delivered, comma-separated, at providers
        // that report each segment apart (`applyReceipt(segment:)`).
        """
        ALTER TABLE deliveries ADD COLUMN receipt_segments TEXT;
        """,
        // 17: account emails' codes: the user a code acts on (a recover-email code outlives the address
        // it restores), the address an email change goes to, and whether the app finishes the action.
        """
        ALTER TABLE oob_codes ADD COLUMN local_id TEXT;
        ALTER TABLE oob_codes ADD COLUMN new_email TEXT;
        ALTER TABLE oob_codes ADD COLUMN in_app INTEGER NOT NULL DEFAULT 0;
        """,
    ]

    /// PostgreSQL's form of a step where it is not the derived DDL, by version. Each is one statement,
    /// run whole (`execute` would cut a DO block at its semicolons).
    static let postgresOverrides: [Int: String] = [11: postgresTextCollation]

    /// Every text column of Herald's tables in this schema, created before version 11 with the
    /// database's default collation, becomes `COLLATE "C"` (byte order). Herald's texts are
    /// identifiers (ids, hashes, limit keys, numbers, statuses), for which a language's ordering means
    /// nothing, and a database created with a locale (`en_US.UTF-8`, the default of the official
    /// Docker image and of most managed services) compares them through `strcoll` at every step down
    /// every index: in `pgbench`, a batch of 16 admissions took 3.7 ms on a `C` database and 5.5 ms on
    /// `en_US.UTF-8`, claims and outcomes about 1.2 times as long. A collation change rewrites no table,
    /// but rebuilds the indexes on those columns under an exclusive lock (docs/several-machines.md, on upgrading,
    /// gives the time it took for a million ledger rows).
    static let postgresTextCollation = """
        DO $$
        DECLARE t record;
        BEGIN
          FOR t IN
            SELECT c.oid::regclass AS name,
                   string_agg(format('ALTER COLUMN %I TYPE text COLLATE "C"', a.attname), ', ' ORDER BY a.attnum) AS changes
            FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
              AND c.relname = ANY (ARRAY[\(tables.map { "'\($0)'" }.joined(separator: ", "))])
              AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype
              AND a.attcollation <> (SELECT oid FROM pg_collation WHERE collname = 'C' AND collnamespace = 'pg_catalog'::regnamespace)
            GROUP BY c.oid
          LOOP
            EXECUTE format('ALTER TABLE %s %s', t.name, t.changes);
          END LOOP;
        END $$
        """

    /// The same steps for PostgreSQL, derived so the two schemas cannot drift: SQLite's INTEGER, REAL
    /// and BLOB columns become BIGINT, DOUBLE PRECISION and BYTEA, and TEXT compares by bytes as in
    /// SQLite (`COLLATE "C"`, see `postgresTextCollation`); `WITHOUT ROWID` (a SQLite storage choice)
    /// goes. Everything else in the steps is SQL both databases run.
    static let postgresSteps: [String] = sqliteSteps.map(postgresDDL)

    static func postgresDDL(_ sqlite: String) -> String {
        var text = sqlite.replacingOccurrences(of: " WITHOUT ROWID", with: "")
        for (from, to) in [("INTEGER", "BIGINT"), ("REAL", "DOUBLE PRECISION"), ("BLOB", "BYTEA"), ("TEXT", "TEXT COLLATE \"C\"")] {
            text = replacingWord(from, with: to, in: text)
        }
        return text
    }

    /// `text` with every whole-word `word` (not part of a longer ASCII identifier) replaced. A regular
    /// expression did this before; Foundation's goes through ICU, whose pages (about 3 MiB resident)
    /// every worker on PostgreSQL then carried for this one start-up step.
    static func replacingWord(_ word: String, with replacement: String, in text: String) -> String {
        let bytes = Array(text.utf8)
        let target = Array(word.utf8)
        func isWordByte(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 64)
        var index = 0
        while index < bytes.count {
            let end = index + target.count
            if end <= bytes.count, bytes[index..<end].elementsEqual(target), index == 0 || isWordByte(bytes[index - 1]) == false,
                end == bytes.count || isWordByte(bytes[end]) == false
            {
                output += replacement.utf8
                index = end
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Tables a store holds, in the order `herald-admin store status` lists them.
    static let tables = [
        "users", "mfa_enrollments", "refresh_tokens", "verification_sessions", "oob_codes", "deliveries", "rate_limits",
        "prefix_velocity", "prefix_blocks", "app_receipts", "invalid_device_tokens", "federated_identities", "idp_credentials",
    ]

    /// The schema version the database holds (0: empty).
    static func version(_ db: any SQLConnection) throws -> Int {
        switch db.dialect {
        case .sqlite:
            return Int(try db.query("PRAGMA user_version").first?.first?.int ?? 0)
        case .postgres:
            let exists = try db.query("SELECT to_regclass('herald_schema_version') IS NOT NULL").first?.first
            guard exists == .integer(1) else { return 0 }
            return Int(try db.query("SELECT version FROM herald_schema_version").first?.first?.int ?? 0)
        }
    }

    /// Applies missing steps in one transaction; safe when several processes start at once (SQLite:
    /// the write lock `BEGIN IMMEDIATE` takes; PostgreSQL: an advisory lock on the schema taken first). Returns the
    /// versions applied. A database newer than this build is left alone and refused.
    @discardableResult
    static func migrate(_ db: any SQLConnection) throws -> [Int] {
        let steps = db.dialect == .sqlite ? sqliteSteps : postgresSteps
        return try db.transaction {
            // One lock per schema: processes migrating the same schema take turns; different schemas in
            // one database (tenants, test runs) do not wait for each other.
            let schema = db.dialect == .postgres ? try db.query("SELECT current_schema()").first?.first?.string ?? "" : ""
            try db.lock("herald-migrations:\(schema)")
            if db.dialect == .postgres {
                try db.query("CREATE TABLE IF NOT EXISTS herald_schema_version (version BIGINT NOT NULL)")
                if try db.query("SELECT version FROM herald_schema_version").isEmpty {
                    try db.query("INSERT INTO herald_schema_version (version) VALUES (0)")
                }
            }
            let current = try version(db)
            guard current <= steps.count else {
                throw StoreError(.failed, "the database has schema version \(current); this build knows up to \(steps.count): upgrade Herald")
            }
            var applied: [Int] = []
            for (index, step) in steps.enumerated() where index >= current {
                switch db.dialect {
                case .sqlite:
                    try db.execute(step)
                    try db.execute("PRAGMA user_version = \(index + 1)")
                case .postgres:
                    if let statement = postgresOverrides[index + 1] { try db.query(statement) } else { try db.execute(step) }
                    try db.execute("UPDATE herald_schema_version SET version = \(index + 1)")
                }
                applied.append(index + 1)
            }
            if db.dialect == .postgres {
                for routine in PostgresRoutines.all { try db.query(routine) }
            }
            return applied
        }
    }
}
