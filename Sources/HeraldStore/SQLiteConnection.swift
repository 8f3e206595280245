import CSQLite
import Foundation

/// A value bound to or read from SQLite.
public enum SQLiteValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    var int: Int64? { if case .integer(let value) = self { value } else { nil } }
    var string: String? { if case .text(let value) = self { value } else { nil } }
    var data: Data? {
        switch self {
        case .blob(let value): value
        case .text(let value): Data(value.utf8)
        default: nil
        }
    }
}

/// A failed SQLite call, with SQLite's own message (never the bound values).
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var message: String
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One SQLite connection. Not thread-safe: `SQLiteStore` confines it to a serial queue, which is
/// why it may be passed across isolation domains (`@unchecked Sendable`) but is only ever used there.
///
/// WAL mode lets readers proceed while one process writes; `busy_timeout` makes writers from several
/// processes (API and workers on one machine) wait for each other instead of failing.
final class SQLiteConnection: @unchecked Sendable {
    private let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init(path: String, busyTimeout: Duration = .seconds(10)) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw StoreError(code: status, message: "\(message) (\(path))")
        }
        self.db = handle
        sqlite3_busy_timeout(db, Int32(busyTimeout.components.seconds * 1000))
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = NORMAL")
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    private func error(_ status: Int32) -> StoreError {
        StoreError(code: status, message: String(cString: sqlite3_errmsg(db)))
    }

    /// Runs one or more statements without bindings (schema, pragmas, transactions).
    func execute(_ sql: String) throws {
        let status = sqlite3_exec(db, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw error(status) }
    }

    /// Runs one statement with bindings and returns its rows (RETURNING included).
    @discardableResult
    func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in bindings.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, position)
            case .integer(let number): status = sqlite3_bind_int64(statement, position, number)
            case .real(let number): status = sqlite3_bind_double(statement, position, number)
            case .text(let text): status = sqlite3_bind_text(statement, position, text, -1, herald_sqlite_transient())
            case .blob(let data):
                status = data.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, position, raw.baseAddress, Int32(raw.count), herald_sqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw error(status) }
        }
        var rows: [[SQLiteValue]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status) }
            var row: [SQLiteValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if count == 0 {
                        row.append(.blob(Data()))
                    } else {
                        row.append(.blob(Data(bytes: sqlite3_column_blob(statement, column), count: count)))
                    }
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    var changes: Int { Int(sqlite3_changes(db)) }

    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status) }
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in a write transaction taken up front (`BEGIN IMMEDIATE`), so concurrent writers
    /// queue on the busy timeout instead of failing halfway.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
