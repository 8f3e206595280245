/// `store`: `sqlite:<path>` (default `sqlite:<state.dir>/herald.sqlite`, one machine) or
/// `postgres://user:password@host:port/db[?sslmode=…&schema=…]` (several machines).
public struct StoreSettings: Sendable {
    /// As written (it may hold a password: log `location.redacted` instead).
    public var url: String
    public var location: StoreLocation
    /// PostgreSQL connections per process (`store.poolSize`, default 16).
    public var poolSize: Int
    /// How long to wait for PostgreSQL at start-up before giving up (`store.connectTimeout`).
    public var connectTimeout: Duration
    /// Extra CA (PEM) that signs the PostgreSQL server's certificate (`store.tls.caFile`).
    public var caFile: String?
    /// When a SQLite commit counts as done (`store.synchronous`); PostgreSQL's is the server's
    /// `synchronous_commit`.
    public var synchronous: SQLiteSynchronous

    public init(
        url: String, location: StoreLocation, poolSize: Int = 16, connectTimeout: Duration = .seconds(10), caFile: String? = nil,
        synchronous: SQLiteSynchronous = .full
    ) {
        self.url = url
        self.location = location
        self.poolSize = poolSize
        self.connectTimeout = connectTimeout
        self.caFile = caFile
        self.synchronous = synchronous
    }
}

/// SQLite's `synchronous` setting for its write-ahead log. Every answer Herald gives promises the
/// send's rows (session, ledger row, limits) are there after a crash, as the broker's confirm
/// promises the job; a claim and an outcome are what keep an SMS from going out twice.
public enum SQLiteSynchronous: String, Sendable, CaseIterable {
    /// Each commit reaches the disk (`fdatasync` of the WAL) before its callers go on: the rows
    /// survive a process crash, a kernel crash and a power cut. One sync per group commit.
    case full
    /// Commits reach the OS only; the WAL is synced at checkpoints. The rows survive a process
    /// crash, but a kernel crash or power cut can lose the last commits while the broker keeps
    /// their jobs: those jobs are dead-lettered as unauthenticated (no ledger row), their codes
    /// fail to verify, and a claim or outcome lost with them can send an SMS twice.
    case normal
}
