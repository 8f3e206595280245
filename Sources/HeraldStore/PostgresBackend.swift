import Foundation
import HeraldCore
import Logging
import Metrics
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// The backend for several machines: postgres-nio's connection pool (`PostgresClient`, `store.poolSize`
/// connections per process, all on one event loop thread of their own) and a thread pool of the same
/// size that runs `SQLStore`'s blocking statement sequences, one leased connection each. A sequence holds its connection for its whole
/// length, so a transaction's statements all run on one connection.
final class PostgresBackend: SQLBackend {
    let dialect = SQLDialect.postgres
    private let client: PostgresClient
    /// The client's one event loop: every connection of the pool lives on it, and group commit runs
    /// there (`executor`), so a batch goes out and its answer comes back on one thread.
    private let loops: MultiThreadedEventLoopGroup
    let executor: EventLoopTaskExecutor
    private let threads: NIOThreadPool
    private let runner: Task<Void, Never>
    /// Ends the lease waits that are past their deadline (`LeaseDeadlines`).
    private let sweeper: Task<Void, Never>
    private let logger: Logger
    private let placeholders = PlaceholderCache()
    /// How long a call waits for a pooled connection before it fails as unavailable (the pool keeps
    /// retrying a database that is down far longer; a request must not hang that long).
    private let leaseTimeout: Duration
    private let deadlines = LeaseDeadlines()
    private let endpoint: String

    init(location: StoreLocation.PostgresLocation, poolSize: Int, caFile: String?, leaseTimeout: Duration, logger: Logger) throws {
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: try Self.tls(location.sslMode, caFile: caFile))
        configuration.options.maximumConnections = poolSize
        // No timer per lease. The pool parks every released connection with a keep-alive timer and,
        // above its minimum, an idle timer; a cancelled timer stays allocated until it would have fired,
        // so at a few thousand leases per second the process grew by tens of MiB. So: two connections
        // kept open (the pool leases the lowest free one first, so below that concurrency no other
        // connection opens or idles out), no client keep-alive query, and the server asked to send
        // TCP keep-alives instead, which keep NAT and firewall state fresh on idle connections.
        configuration.options.minimumConnections = min(2, poolSize)
        configuration.options.keepAliveBehavior = nil
        var startup = [("tcp_keepalives_idle", "30"), ("tcp_keepalives_interval", "10"), ("tcp_keepalives_count", "3")]
        configuration.options.connectTimeout = leaseTimeout
        self.leaseTimeout = leaseTimeout
        self.endpoint = "\(location.host):\(location.port)"
        if let schema = location.schema {
            // Every connection resolves table names in the schema (the migrations create it).
            startup.append(("search_path", schema))
        }
        configuration.options.additionalStartupParameters = startup
        self.loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.executor = EventLoopTaskExecutor(loops.next())
        self.client = PostgresClient(configuration: configuration, eventLoopGroup: loops, backgroundLogger: logger)
        self.threads = NIOThreadPool(numberOfThreads: poolSize)
        threads.start()
        self.logger = logger
        let client = self.client
        let deadlines = self.deadlines
        self.runner = Task { await client.run() }
        self.sweeper = Task {
            while Task.isCancelled == false {
                try? await Task.sleep(for: .milliseconds(100))
                deadlines.expire(now: .now)
            }
        }
    }

    /// libpq's sslmode on NIOSSL: only `verify-ca` and `verify-full` check without a CA file given.
    static func tls(_ mode: StoreLocation.PostgresLocation.SSLMode, caFile: String?) throws -> PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        }
        switch mode {
        case .disable: return .disable
        case .prefer, .require:
            tls.certificateVerification = caFile == nil ? .none : .fullVerification
            return mode == .prefer ? .prefer(tls) : .require(tls)
        case .verifyCA:
            tls.certificateVerification = .noHostnameVerification
            return .require(tls)
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            return .require(tls)
        }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withConnection { [threads, logger, placeholders] connection in
            try await threads.runIfActive {
                try body(PostgresSQLConnection(connection: connection, logger: logger, placeholders: placeholders))
            }
        }
    }

    /// One statement straight on a pooled connection, awaited on the event loop: no thread-pool hop
    /// and no blocking wait (the send path's one call). Deadlocks are retried as `transaction` does.
    func statement(_ sql: String, _ bindings: [SQLValue]) async throws -> [[SQLValue]] {
        let query = PostgresQuery(unsafeSQL: placeholders.postgres(sql), binds: PostgresSQLConnection.binds(bindings))
        return try await retryingAlone { [logger] connection in
            var rows: [[SQLValue]] = []
            for try await row in try await connection.query(query, logger: logger) {
                rows.append(try row.map(PostgresSQLConnection.value))
            }
            return rows
        }
    }

    /// `statement` for a call made thousands of times a second: prepared once per connection (postgres-nio
    /// keeps it by `Statement.name`), then only bound and run. An unnamed statement is parsed, analysed
    /// and planned again on every call: about 7 % of PostgreSQL's CPU in a c64 send run, spent on the
    /// one-line call of the batch routine.
    ///
    /// postgres-nio keeps a failed preparation's error for the connection's life and answers every later
    /// execution of that statement with it (a call made before the routine existed would fail on that
    /// connection forever). So an error that is neither a duplicate key nor a retry closes the
    /// connection, and the pool opens a fresh one.
    func prepared<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] where Statement.Row: Sendable {
        try await retryingAlone { [logger] connection in
            do {
                var rows: [Statement.Row] = []
                for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
                return rows
            } catch let error as PSQLError {
                let failure = PostgresSQLConnection.storeError(error)
                if failure.isUnique == false && failure.retryable == false { try? await connection.close() }
                throw failure
            }
        }
    }

    /// Runs `body` on a leased connection as a transaction of its own, again (up to five times in all)
    /// when PostgreSQL reports a deadlock or a serialization failure.
    private func retryingAlone<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await withConnection { connection in
                    do {
                        return try await body(connection)
                    } catch let error as PSQLError {
                        throw PostgresSQLConnection.storeError(error)
                    }
                }
            } catch let error as StoreError where error.retryable && attempt < 5 {
                PostgresSQLConnection.countRetry()
                continue
            }
        }
    }

    /// Runs `body` with a leased connection. Only the wait for a connection is bounded (by
    /// `leaseTimeout`); statements already running finish.
    private func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let leased = LeaseFlag()
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { [client] in
                    try await client.withConnection { connection in
                        leased.set()
                        return try await body(connection)
                    }
                }
                group.addTask { [deadlines, leaseTimeout] in
                    await deadlines.wait(until: .now + leaseTimeout)
                    return nil
                }
                while let result = try await group.next() {
                    if let value = result {
                        group.cancelAll()
                        return value
                    }
                    if leased.isSet == false {
                        group.cancelAll()
                        throw StoreError(.unavailable, "PostgreSQL at \(endpoint): no connection within \(leaseTimeout)")
                    }
                }
                throw StoreError(.unavailable, "PostgreSQL at \(endpoint): the call ended without an answer")
            }
        } catch let error as PSQLError {
            throw PostgresSQLConnection.storeError(error)
        } catch let error as StoreError {
            throw error
        } catch  where leased.isSet {
            // The body's own errors (an `AccountConflict`, say) pass through unchanged.
            throw error
        } catch {
            // Before a connection was leased: pool errors (circuit breaker, shut down) and cancellation
            // all mean the database cannot be reached.
            throw StoreError(.unavailable, "PostgreSQL at \(endpoint) unreachable: \(String(describing: error).prefix(200))")
        }
    }

    func close() async {
        runner.cancel()
        sweeper.cancel()
        await runner.value
        await sweeper.value
        try? await threads.shutdownGracefully()
        try? await loops.shutdownGracefully()
    }
}

/// Set once a call holds a connection (from then on it is not timed out).
private final class LeaseFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .releasing) }
    var isSet: Bool { flag.load(ordering: .acquiring) }
}

/// `?` and `?N` placeholders (both backends' statement text) rewritten once per statement as `$N`.
final class PlaceholderCache: Sendable {
    private let cache = Mutex<[String: String]>([:])

    func postgres(_ sql: String) -> String {
        if let cached = cache.withLock({ $0[sql] }) { return cached }
        let rewritten = Self.rewrite(sql)
        cache.withLock { $0[sql] = rewritten }
        return rewritten
    }

    /// Outside string literals and `--` comments: `?N` → `$N`, a bare `?` → the next number. A comment
    /// is copied as it is: an apostrophe in one (a routine's "the batch's rows") would otherwise open a
    /// literal that swallows the placeholders after it, and the jsonpath `?` of a routine's body
    /// outside it would be rewritten.
    static func rewrite(_ sql: String) -> String {
        var output = ""
        output.reserveCapacity(sql.utf8.count + 16)
        var next = 1
        var inLiteral = false
        var characters = sql.makeIterator()
        var pending: Character? = characters.next()
        while let character = pending {
            pending = characters.next()
            if character == "-", pending == "-", inLiteral == false {
                output.append(character)
                while let commented = pending, commented != "\n" {
                    output.append(commented)
                    pending = characters.next()
                }
                continue
            }
            if character == "'" { inLiteral.toggle() }
            guard character == "?", inLiteral == false else {
                output.append(character)
                continue
            }
            var digits = ""
            while let digit = pending, digit.isASCII, digit.isNumber {
                digits.append(digit)
                pending = characters.next()
            }
            if digits.isEmpty {
                output += "$\(next)"
                next += 1
            } else {
                output += "$" + digits
            }
        }
        return output
    }
}

/// One leased PostgreSQL connection seen as a blocking `SQLConnection`. Only used on the thread
/// pool's threads (never an event loop), where waiting on a future is allowed.
final class PostgresSQLConnection: SQLConnection {
    let dialect = SQLDialect.postgres
    private let connection: PostgresConnection
    private let logger: Logger
    private let placeholders: PlaceholderCache
    private(set) var changes = 0
    private var inTransaction = false

    init(connection: PostgresConnection, logger: Logger, placeholders: PlaceholderCache) {
        self.connection = connection
        self.logger = logger
        self.placeholders = placeholders
    }

    @discardableResult
    func query(_ sql: String, _ bindings: [SQLValue]) throws -> [[SQLValue]] {
        let result: PostgresQueryResult
        do {
            result = try connection.query(PostgresQuery(unsafeSQL: placeholders.postgres(sql), binds: Self.binds(bindings)), logger: logger).wait()
        } catch let error as PSQLError {
            throw Self.storeError(error)
        }
        changes = result.metadata.rows ?? 0
        return try result.rows.map { row in try row.map(Self.value) }
    }

    func execute(_ script: String) throws {
        for statement in script.split(separator: ";") where statement.allSatisfy(\.isWhitespace) == false {
            try query(String(statement), [])
        }
    }

    static func binds(_ bindings: [SQLValue]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: bindings.count)
        for value in bindings {
            switch value {
            case .null: binds.appendNull()
            case .integer(let number): binds.append(number)
            case .real(let number): binds.append(number)
            case .text(let text): binds.append(text)
            case .blob(let data): binds.append(ByteBuffer(bytes: data))
            }
        }
        return binds
    }

    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return .integer(try cell.decode(Int64.self))
        case .float8, .float4: return .real(try cell.decode(Double.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .bytea: return .blob(try cell.decode(Data.self))
        case .void: return .null
        default: return .text(try cell.decode(String.self))
        }
    }

    /// Deadlocks and serialization failures are PostgreSQL asking for the transaction again.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        precondition(inTransaction == false, "nested transactions are not used")
        var attempt = 0
        while true {
            attempt += 1
            try query("BEGIN", [])
            inTransaction = true
            defer { inTransaction = false }
            do {
                let result = try body()
                try query("COMMIT", [])
                return result
            } catch {
                _ = try? query("ROLLBACK", [])
                guard let failure = error as? StoreError, failure.retryable, attempt < 5 else { throw error }
                Self.countRetry()
            }
        }
    }

    /// Deadlocks and serialization failures retried (`herald_store_retries_total`): each one waited
    /// out PostgreSQL's deadlock timeout (1 s by default), so a rising count explains a p99.
    static func countRetry() {
        Counter(label: "herald_store_retries_total", dimensions: [("store", "postgres")]).increment()
    }

    func lock(_ key: @autoclosure () -> String) throws {
        try query("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [.text(key())])
    }

    /// The server's message and SQLSTATE; postgres-nio's own description hides details on purpose,
    /// and neither carries bound values.
    static func storeError(_ error: PSQLError) -> StoreError {
        guard let info = error.serverInfo else {
            return StoreError(.unavailable, "PostgreSQL unavailable (\(error.code))")
        }
        let state = info[.sqlState] ?? "?????"
        let message = "PostgreSQL \(state): \(info[.message] ?? "error")"
        switch state {
        case "23505": return StoreError(.unique(info[.constraintName] ?? ""), message)
        case "40P01", "40001": return StoreError(.retry, message)
        case _ where state.hasPrefix("08") || state.hasPrefix("57P"): return StoreError(.unavailable, message)
        default: return StoreError(.failed, message)
        }
    }
}
