import CSQLite
import Foundation
import HeraldCore
import Metrics
import Synchronization

/// One SQLite connection. Not thread-safe: `SQLiteBackend` confines it to a serial queue, which is
/// why it may be passed across isolation domains (`@unchecked Sendable`) but is only ever used there.
///
/// WAL mode lets readers proceed while one process writes; a busy handler (shim.h) makes writers from several
/// processes (API and workers on one machine) wait for each other instead of failing.
final class SQLiteConnection: SQLConnection, @unchecked Sendable {
    let dialect = SQLDialect.sqlite
    private let db: OpaquePointer
    private var statements: [StatementText: OpaquePointer] = [:]
    /// The running statement's texts, bound from here without a copy (`query`). Kept from one statement
    /// to the next and grown to the largest set seen: one allocation per statement was about 200
    /// instructions, seven times a send.
    private var texts = UnsafeMutableRawPointer.allocate(byteCount: 1_024, alignment: 1)
    private var textsCapacity = 1_024

    /// Process-wide settings (`herald_sqlite_configure`), applied once before the first connection.
    private static let configured: Void = { _ = herald_sqlite_configure() }()

    init(path: String, synchronous: SQLiteSynchronous, busyTimeout: Duration = .seconds(10)) throws {
        Self.configured
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw StoreError(.failed, "SQLite \(status): \(message) (\(path))")
        }
        self.db = handle
        waitWhenBusy(upTo: busyTimeout)
        try switchToWAL(waitingUpTo: busyTimeout)
        // FULL (`store.synchronous`): a commit returns once the WAL is synced, so nothing answered is lost
        // to a power cut; one sync per group commit. Syncing after the commit on a thread of its own, off
        // the write lock, cost more CPU and drained slower (smaller batches, one more hand-off), so the
        // sync stays SQLite's. NORMAL syncs at checkpoints only.
        try execute("PRAGMA synchronous = \(synchronous == .full ? "FULL" : "NORMAL")")
        try execute("PRAGMA foreign_keys = ON")
        // 2 MiB, SQLite's own default: the hot set is the B-trees' interior pages and right edges. 16 MiB
        // bought no throughput (API at c64 within noise either way) and each process's page cache grew
        // towards it as the ledger and sessions grew, 9 MiB more in a worker over a 50,000-job drain.
        try execute("PRAGMA cache_size = -2048")
        // The background checkpointer (SQLiteBackend) keeps the WAL short; this is only the safety net
        // for when it falls behind. A checkpoint inside a commit stalls every call of that batch.
        try execute("PRAGMA wal_autocheckpoint = 10000")
        try execute("PRAGMA temp_store = MEMORY")
    }

    /// How long a statement waits for another connection's lock before it fails with SQLITE_BUSY.
    func waitWhenBusy(upTo timeout: Duration) {
        herald_sqlite_set_busy_handler(db, Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
    }

    /// `PRAGMA journal_mode = WAL`, waited for. While another process writes to a file still in rollback
    /// mode (the first process to open a fresh file, switching it to WAL), the pragma answers SQLITE_BUSY
    /// at once: SQLite does not call the busy handler there. `make run` starts five processes on one
    /// fresh file, and one or two of them died on it; so this retries, as the busy handler would wait.
    private func switchToWAL(waitingUpTo timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        var status = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nil, nil, nil)
        while status == SQLITE_BUSY, ContinuousClock.now < deadline {
            usleep(UInt32.random(in: 1_000...5_000))
            status = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nil, nil, nil)
        }
        guard status == SQLITE_OK else {
            let failure = error(status)
            throw StoreError(failure.kind, failure.message + " (switching to WAL mode)")
        }
        // A file system without shared memory (a network mount) keeps the old mode; several processes
        // on one file then lose what WAL gives them (readers beside a writer), so refuse to go on.
        let mode = try query("PRAGMA journal_mode", []).first?.first?.string
        guard mode == "wal" else {
            throw StoreError(.failed, "SQLite kept journal mode \(mode ?? "unknown") instead of WAL; put the store on a local file system")
        }
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
        texts.deallocate()
    }

    private func error(_ status: Int32) -> StoreError {
        let message = String(cString: sqlite3_errmsg(db))
        // "UNIQUE constraint failed: users.project_id, users.email" names the columns, not the index.
        let extended = sqlite3_extended_errcode(db)
        if extended == herald_sqlite_constraint_unique() || extended == herald_sqlite_constraint_primarykey() {
            return StoreError(.unique(message), "SQLite \(status): \(message)")
        }
        if extended == herald_sqlite_constraint_notnull() { return StoreError(.notNull(message), "SQLite \(status): \(message)") }
        // Another process held the file's write lock past the busy timeout (a long purge, a process
        // frozen inside a transaction): the store is unavailable for now, not the request wrong,
        // so the API answers 503 with Retry-After rather than 500.
        if status & 0xFF == SQLITE_BUSY || status & 0xFF == SQLITE_LOCKED {
            return StoreError(.unavailable, "SQLite \(status): \(message)")
        }
        return StoreError(.failed, "SQLite \(status): \(message)")
    }

    /// Runs one or more statements without bindings (schema, pragmas, transactions).
    func execute(_ sql: String) throws {
        let status = sqlite3_exec(db, sql, nil, nil, nil)
        guard status == SQLITE_OK else {
            // These statements carry no values (schema, pragmas, transactions): naming the first line says
            // which step failed.
            let failure = error(status)
            throw StoreError(failure.kind, failure.message + " (in " + (sql.split(separator: "\n").first.map(String.init) ?? "") + ")")
        }
    }

    /// Runs one statement with bindings and returns its rows (RETURNING included).
    @discardableResult
    func query(_ sql: String, _ bindings: [SQLValue]) throws -> [[SQLValue]] {
        let statement = try prepared(sql)
        // Every text is copied into one buffer that is not touched again until the bindings are cleared,
        // and bound from there without a copy (SQLITE_STATIC): bound as SQLITE_TRANSIENT, SQLite made a
        // copy of its own with a malloc per value, about thirty per send.
        var textBytes = 0
        for case .text(let text) in bindings { textBytes += text.utf8.count }
        if textBytes > textsCapacity {
            texts.deallocate()
            textsCapacity = max(textBytes, textsCapacity * 2)
            texts = UnsafeMutableRawPointer.allocate(byteCount: textsCapacity, alignment: 1)
        }
        let texts = self.texts
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        var textOffset = 0
        for (index, value) in bindings.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, position)
            case .integer(let number): status = sqlite3_bind_int64(statement, position, number)
            case .real(let number): status = sqlite3_bind_double(statement, position, number)
            case .text(var text):
                let start = texts.advanced(by: textOffset)
                let count = text.withUTF8 { utf8 in
                    if let base = utf8.baseAddress { start.copyMemory(from: base, byteCount: utf8.count) }
                    return utf8.count
                }
                textOffset += count
                // A non-nil pointer even for an empty text: a nil one would bind NULL.
                status = sqlite3_bind_text(statement, position, start.assumingMemoryBound(to: CChar.self), Int32(count), nil)
            case .blob(let data):
                status = data.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, position, raw.baseAddress, Int32(raw.count), herald_sqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw error(status) }
        }
        var rows: [[SQLValue]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status) }
            var row: [SQLValue] = []
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
        if let cached = statements[StatementText(sql)] { return cached }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status) }
        statements[StatementText(sql)] = statement
        return statement
    }

    /// True inside a transaction (a group-commit batch, or `transaction` on the start-up path).
    var inTransaction: Bool { sqlite3_get_autocommit(db) == 0 }
    /// Savepoints open now; inside one, `transaction` needs no savepoint of its own.
    private var savepoints = 0

    /// Runs `body` in a write transaction taken up front (`BEGIN IMMEDIATE`), so concurrent writers
    /// queue on the busy timeout instead of failing halfway. Inside a group-commit batch every call
    /// already runs either bare (a throw rolls the whole batch back) or under its own savepoint, which
    /// undoes the call when it throws; a store method's transaction is then the call itself (no caller
    /// catches a transaction's error and writes on). Inside a plain transaction it is a savepoint: all
    /// or nothing, committed with the enclosing one.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        if savepoints > 0 { return try body() }
        if inTransaction { return try savepoint("nested", body) }
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

    /// Runs `body` inside the enclosing transaction with no savepoint: when it throws, its writes so far
    /// stand until the caller rolls the whole transaction back, which it must then do.
    func bare<T>(_ body: () throws -> T) rethrows -> T {
        savepoints += 1
        defer { savepoints -= 1 }
        return try body()
    }

    /// Runs `body` under a savepoint: its writes are undone when it throws, kept (until the enclosing
    /// transaction ends) when it returns.
    func savepoint<T>(_ name: String, _ body: () throws -> T) throws -> T {
        try query("SAVEPOINT " + name)
        savepoints += 1
        defer { savepoints -= 1 }
        do {
            let result = try body()
            try query("RELEASE " + name)
            return result
        } catch {
            _ = try? query("ROLLBACK TO " + name)
            _ = try? query("RELEASE " + name)
            throw error
        }
    }
}

extension SQLiteConnection {
    /// A transaction here already holds the only write lock (`BEGIN IMMEDIATE`).
    func lock(_ key: @autoclosure () -> String) throws {}
}

/// The embedded backend: one SQLite file shared by every Herald process on a machine, one connection
/// per process confined to a serial queue (off the cooperative pool: SQLite may wait on another
/// process's write lock).
///
/// Group commit: calls that arrive while a batch runs wait, then all run in the next batch, one write
/// transaction. A call's failure undoes only its own writes; every call is answered after the commit
/// that makes its writes durable (synced, with `store.synchronous: full`), or with the commit's error.
/// Under load the per-commit costs (file locks, WAL frame writes, syncs, thread hand-offs) are paid
/// once per batch instead of once per call; alone, a call is its own batch.
///
/// The calls run bare first, with no savepoint each: a savepoint makes SQLite copy every page a call
/// changes into its statement journal first (about sixteen 4 KiB pages and sixty allocations per
/// send, a fifth of herald-api's allocations). Calls rarely throw (a conflict, a refused sign-up); when
/// one does, its writes cannot be told from the others', so the batch is rolled back and run again
/// with a savepoint around each call, which then undoes only the failing call's writes.
final class SQLiteBackend: SQLBackend {
    let dialect = SQLDialect.sqlite
    private let connection: SQLiteConnection
    private let queue = DispatchQueue(label: "herald.sqlite")
    private let waiting = Mutex<(calls: [Call], draining: Bool)>(([], false))
    /// Calls per committed batch, for `herald_store_batch_size`.
    private let batchSizes = Recorder(label: "herald_store_batch_size", dimensions: [("store", "sqlite")])
    /// One batch's transaction, from BEGIN to COMMIT (as `herald_store_batch_seconds` on PostgreSQL).
    private let batchTimes = Timer(label: "herald_store_batch_seconds", dimensions: [("store", "sqlite")])
    /// Batches rolled back because a call threw, and run again with a savepoint around each call.
    private let batchReruns = Counter(label: "herald_store_batch_reruns_total", dimensions: [("store", "sqlite")])

    /// One call waiting for a batch: `perform` runs it on the queue (under a savepoint of its own when
    /// `isolated`), keeps its result and says whether it succeeded; `finish` answers the caller once the
    /// batch committed (`nil`) or failed.
    private struct Call: @unchecked Sendable {
        let perform: (_ connection: SQLiteConnection, _ isolated: Bool) -> Bool
        let finish: ((any Error)?) -> Void
    }

    /// A second connection that copies the WAL into the database file in the background (a PASSIVE
    /// checkpoint every 100 ms: it never blocks writers or readers, and two processes' checkpointers
    /// simply take turns). Before, the commit that crossed the WAL threshold did the checkpoint itself,
    /// about 16 MB of writes and an fsync, and every call in that batch waited: p99 went from 9 to 30 ms.
    ///
    /// Copying is not enough to keep the WAL short: SQLite writes from the start of the file again only
    /// when a write transaction begins while every frame is already copied, and with batches back to
    /// back (two processes' writers) that moment never came. The WAL grew to `wal_autocheckpoint`
    /// (10,000 frames, 40 MB) within two seconds under load, and from then on every commit ran a
    /// checkpoint of its own until one began in time. So once the WAL holds `restartFrames`, the
    /// checkpointer follows its PASSIVE copy with a RESTART: it holds off writers only to copy the few
    /// frames written since and to wait for readers to leave the WAL, and the next write starts it over.
    /// It waits at most `restartWait` for them (writers wait meanwhile), then leaves the WAL alone for a
    /// while (`WALRestartPolicy`).
    /// With two store handles writing sessions back to back (SQLiteCheckpointTests) the WAL stays at
    /// 22–43 MiB, where without the restarts it passes 500 MiB; a short WAL also saves herald-api about
    /// 3 % of its CPU per send under the bench's load.
    static let restartWait = Duration.milliseconds(25)
    private let checkpointing = CheckpointFlag()
    /// Scans for operators and reports (`read`). Run as batch calls they held every send: with 200,000
    /// sessions in the last hour, the once-a-minute conversion report held writes for 105–124 ms
    /// (`herald-bench store`).
    private let reader: SQLiteReader

    /// Opens (creating if needed) the database at `path`. The file holds account data and code
    /// hashes: owner-only.
    init(path: String, synchronous: SQLiteSynchronous) throws {
        try createOwnerOnlyFile(path)
        self.connection = try SQLiteConnection(path: path, synchronous: synchronous)
        self.reader = SQLiteReader(path: path)
        let checkpointer = try SQLiteConnection(path: path, synchronous: synchronous)
        checkpointer.waitWhenBusy(upTo: Self.restartWait)
        let flag = checkpointing
        let reader = self.reader
        let thread = Thread {
            var restarts = WALRestartPolicy()
            while flag.running {
                usleep(100_000)
                // Each checkpoint answers (busy, frames in the WAL, frames copied).
                let frames = (try? checkpointer.query("PRAGMA wal_checkpoint(PASSIVE)"))?.first?[1].int ?? 0
                guard restarts.shouldRestart(framesInWAL: frames, readerOpen: reader.isReading) else { continue }
                let busy = (try? checkpointer.query("PRAGMA wal_checkpoint(RESTART)"))?.first?[0].int ?? 1
                restarts.restartEnded(completed: busy == 0)
            }
        }
        thread.name = "herald.sqlite.checkpoint"
        thread.start()
    }

    deinit {
        checkpointing.stop()
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            // The call's result, written by `perform` and read by `finish`, both on the queue. A captured
            // variable rather than a generic class: that class's deinit looked up `Result<T, Error>`'s
            // metadata at run time on every call.
            var result: Result<T, any Error> = .failure(StoreError(.failed, "not run"))
            let call = Call(
                perform: { connection, isolated in
                    result = Result {
                        isolated ? try connection.savepoint("call") { try body(connection) } : try connection.bare { try body(connection) }
                    }
                    if case .failure = result { return false }
                    return true
                },
                finish: { batchError in
                    continuation.resume(with: batchError.map { .failure($0) } ?? result)
                })
            let startDraining = waiting.withLock { state in
                state.calls.append(call)
                defer { state.draining = true }
                return state.draining == false
            }
            if startDraining { queue.async { self.drain() } }
        }
    }

    /// Runs batches until no call is waiting.
    private func drain() {
        while true {
            let batch = waiting.withLock { state in
                let calls = state.calls
                state.calls = []
                if calls.isEmpty { state.draining = false }
                return calls
            }
            if batch.isEmpty { return }
            commit(batch)
        }
    }

    private func commit(_ batch: [Call]) {
        var batchError: (any Error)?
        let started = ContinuousClock.now
        do {
            // A lone call that throws needs no second run: rolling the batch back undoes only its writes.
            if try runBatch(batch, isolated: false) == false, batch.count > 1 {
                batchReruns.increment()
                _ = try runBatch(batch, isolated: true)
            }
        } catch {
            batchError = error
        }
        batchTimes.record(duration: ContinuousClock.now - started)
        batchSizes.record(batch.count)
        for call in batch { call.finish(batchError) }
    }

    /// Runs `batch` in one transaction and commits it; false when a bare call threw, in which case the
    /// transaction was rolled back. Isolated calls that throw are undone by their savepoints and the
    /// rest commits.
    private func runBatch(_ batch: [Call], isolated: Bool) throws -> Bool {
        do {
            try connection.execute("BEGIN IMMEDIATE")
            for call in batch {
                let succeeded = call.perform(connection, isolated)
                // An I/O or disk-full error can end the transaction itself; then nothing of the batch stands.
                guard connection.inTransaction else { throw StoreError(.failed, "SQLite rolled the batch back") }
                if succeeded == false && isolated == false {
                    try connection.execute("ROLLBACK")
                    return false
                }
            }
            try connection.execute("COMMIT")
            return true
        } catch {
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await reader.read(body)
    }

    /// Runs `body` on the calling thread (start-up work such as migrations, before any request).
    func runNow<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try queue.sync { try body(connection) }
    }

    func close() async {
        checkpointing.stop()
    }
}

/// When the checkpointer asks SQLite to start the WAL over (`SQLiteBackend`). A RESTART holds writers
/// off while it waits for readers to leave the WAL. It is not asked while the process's own read
/// connection is inside a read (`SQLiteBackend.read`); another process's long read (`herald-admin`, a
/// store copy) would make every turn wait its full `restartWait` while it lasts, so after a RESTART
/// that readers held up the policy skips `backoffTurns` turns (writers then lose at most 25 ms a second
/// to it).
struct WALRestartPolicy {
    /// Frames in the WAL (4 KiB each) from which a restart is worth asking for.
    var threshold: Int64 = 1_000
    var backoffTurns = 10
    private(set) var skipping = 0

    /// Called every turn with the WAL's frame count after the PASSIVE copy. `readerOpen`: this
    /// process's own read connection is inside a read, which a restart would wait for with writers held.
    mutating func shouldRestart(framesInWAL frames: Int64, readerOpen: Bool = false) -> Bool {
        if readerOpen { return false }
        if skipping > 0 {
            skipping -= 1
            return false
        }
        return frames >= threshold
    }

    /// `completed` is false when readers still used the WAL at the end of the wait (or it failed).
    mutating func restartEnded(completed: Bool) {
        if completed == false { skipping = backoffTurns }
    }
}

/// The connection `SQLiteBackend.read` runs on: opened at the first read, confined to a queue of its
/// own. WAL gives each read a snapshot of the last commit while the writer goes on; `query_only`
/// keeps the connection to reads.
private final class SQLiteReader: @unchecked Sendable {
    private let path: String
    private let queue = DispatchQueue(label: "herald.sqlite.read")
    /// Touched only on `queue`.
    private var connection: SQLiteConnection?
    /// Inside a read: the checkpointer leaves the WAL's restart for later rather than wait for it.
    private let reading = Atomic<Bool>(false)

    var isReading: Bool { reading.load(ordering: .relaxed) }

    init(path: String) { self.path = path }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.inTransaction(body) })
            }
        }
    }

    /// One read transaction, so that a body of several statements reads one snapshot.
    private func inTransaction<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        let connection = try open()
        reading.store(true, ordering: .relaxed)
        defer { reading.store(false, ordering: .relaxed) }
        try connection.execute("BEGIN")
        do {
            let result = try body(connection)
            try connection.execute("COMMIT")
            return result
        } catch {
            if connection.inTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    private func open() throws -> SQLiteConnection {
        if let connection { return connection }
        // It never commits a write, so when a commit is synced does not apply to it.
        let opened = try SQLiteConnection(path: path, synchronous: .normal)
        try opened.execute("PRAGMA query_only = ON")
        connection = opened
        return opened
    }
}

/// Tells the checkpoint thread to finish (after its current sleep).
private final class CheckpointFlag: Sendable {
    private let flag = Atomic<Bool>(true)
    var running: Bool { flag.load(ordering: .acquiring) }
    func stop() { flag.store(false, ordering: .releasing) }
}

/// Creates the database file 0600 in a directory created 0700 (SQLite gives its -wal and -shm files
/// the file's mode).
private func createOwnerOnlyFile(_ path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    if directory.isEmpty == false {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw StoreError(.failed, "cannot create \(path): \(String(cString: strerror(errno)))") }
    fchmod(descriptor, 0o600)
    close(descriptor)
}

/// A statement cache key that hashes the text's length and three words of it rather than all of it: a
/// send looks up seven statements, the limits' upsert alone about 700 bytes, and SipHash over every byte
/// on every call showed in profiles. Equality still compares the whole text.
struct StatementText: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            guard bytes.count >= 8 else { return hasher.combine(bytes: UnsafeRawBufferPointer(bytes)) }
            // Start, middle and end: the cache holds a few dozen statements, which differ in length or in
            // those bytes, and a collision costs one comparison more. Hashing the last 64 bytes instead
            // was half of each lookup's instructions (`herald-bench instructions`).
            let raw = UnsafeRawBufferPointer(bytes)
            hasher.combine(raw.loadUnaligned(as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: (bytes.count - 8) / 2, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
        }
    }
}
