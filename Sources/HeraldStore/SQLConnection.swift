import Foundation

/// A value bound to or read from a SQL statement. Both backends store only these five shapes
/// (PostgreSQL columns are BIGINT, DOUBLE PRECISION, TEXT and BYTEA), so rows read the same everywhere.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    var int: Int64? { if case .integer(let value) = self { value } else { nil } }
    var string: String? { if case .text(let value) = self { value } else { nil } }
    var double: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }
    var data: Data? {
        switch self {
        case .blob(let value): value
        case .text(let value): Data(value.utf8)
        default: nil
        }
    }
}

/// A failed store call, with the database's own message (never the bound values).
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// A statement failed; `message` says why.
        case failed
        /// A write broke the unique index or key named here (`users_email`, `users_phone`, `users_pkey`).
        case unique(String)
        /// A write put NULL into the NOT NULL column named here (SQLite: the statement was undone, the
        /// transaction goes on). SQLite's `decideAll` refuses this way on purpose.
        case notNull(String)
        /// The database could not be reached (PostgreSQL down, pool closed): worth a retry later.
        case unavailable
        /// PostgreSQL broke a deadlock or a serialization conflict by aborting this transaction: run it again.
        case retry
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind = .failed, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "store error: \(message)" }

    var retryable: Bool { kind == .retry }
    var isUnique: Bool {
        if case .unique = kind { return true }
        return false
    }
}

/// The spelling differences between the two SQL backends. Statements are written once, in the
/// subset both run (UPSERT, RETURNING, integer milliseconds), with `?` or `?N` placeholders.
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres

    /// The larger of two expressions: SQLite's two-argument `max`, PostgreSQL's `GREATEST`.
    func greatest(_ first: String, _ second: String) -> String {
        switch self {
        case .sqlite: "max(\(first), \(second))"
        case .postgres: "GREATEST(\(first), \(second))"
        }
    }
}

/// One database connection, used by one thread at a time inside `SQLBackend.run`. Calls block:
/// backends run them on their own threads, never on the cooperative pool.
protocol SQLConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs one statement and returns its rows (RETURNING included).
    @discardableResult
    func query(_ sql: String, _ bindings: [SQLValue]) throws -> [[SQLValue]]
    /// Runs a script of statements separated by `;` without bindings (schema steps, pragmas).
    func execute(_ script: String) throws
    /// Rows changed by the last INSERT/UPDATE/DELETE.
    var changes: Int { get }
    /// Runs `body` in one write transaction; rolls back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Inside a transaction: waits until no other transaction holds `key`, then holds it until commit.
    /// For read-modify-write of a row that may not exist yet (no row to lock with `FOR UPDATE`).
    /// The key is built only where a lock is taken (PostgreSQL); SQLite's sends skip making its text.
    func lock(_ key: @autoclosure () -> String) throws
}

extension SQLConnection {
    @discardableResult
    func query(_ sql: String) throws -> [[SQLValue]] { try query(sql, []) }
}

/// Where `SQLStore` runs its statements: a connection for the duration of `body`, on a thread that
/// may block.
protocol SQLBackend: Sendable {
    var dialect: SQLDialect { get }
    func run<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// One statement on its own (its own transaction); a backend may run it more directly than `run`.
    func statement(_ sql: String, _ bindings: [SQLValue]) async throws -> [[SQLValue]]
    /// A read that may scan many rows (an operator's listing, a report): `body` only reads, and runs
    /// beside the writes rather than among them. SQLite's writes are one queue of batches, so a scan
    /// there would hold every send until it ends.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Closes connections and stops background work; later calls fail.
    func close() async
}

extension SQLBackend {
    func statement(_ sql: String, _ bindings: [SQLValue]) async throws -> [[SQLValue]] {
        try await run { try $0.query(sql, bindings) }
    }

    /// A backend whose `run` already takes a connection of its own (PostgreSQL's pool) reads there.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await run(body)
    }
}
