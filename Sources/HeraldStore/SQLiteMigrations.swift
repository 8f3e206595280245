/// Schema versions, applied in order and recorded in `PRAGMA user_version`.
enum SQLiteMigrations {
    static let steps: [String] = [
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
        """
    ]

    /// Applies missing steps in one transaction per step; safe when several processes start at once.
    static func migrate(_ connection: SQLiteConnection) throws {
        try connection.transaction {
            let current = Int(try connection.query("PRAGMA user_version").first?.first?.int ?? 0)
            for (index, step) in steps.enumerated() where index >= current {
                try connection.execute(step)
                try connection.execute("PRAGMA user_version = \(index + 1)")
            }
        }
    }
}
