import Foundation
import HeraldCore

/// Every store port in SQL, for SQLite (the embedded default, one machine) and PostgreSQL (several
/// machines). The statements are written once; `SQLBackend` runs them and `SQLDialect` covers the
/// few spelling differences.
///
/// Every decision that must hold across processes (spending a check attempt, consuming a session or
/// an oob code, claiming a job, a GCRA decision) is a single statement, atomic in both databases; the
/// few read-modify-write steps are one transaction (prefix velocity also takes `lock`).
public final class SQLStore: HeraldStoreProtocol {
    let backend: any SQLBackend
    /// PostgreSQL: group commit for the send and delivery hot paths (SQLite's backend commits every
    /// call in batches already).
    let batcher: PostgresBatcher?
    /// The same backend when it is SQLite's, called directly rather than through `SQLBackend`: every
    /// call is then specialised for its result type, where through the protocol each one looked up
    /// the generic metadata of its continuation, result and outcome at run time (about ten lookups,
    /// 3,000–4,000 instructions, per send).
    private let sqlite: SQLiteBackend?

    public var dialect: SQLDialect { backend.dialect }

    init(backend: any SQLBackend) {
        self.backend = backend
        self.sqlite = backend as? SQLiteBackend
        self.batcher = (backend as? PostgresBackend).map { PostgresBatcher(backend: $0) }
    }

    /// Opens (creating if needed) the SQLite database at `path` and, with `migrate`, brings its schema
    /// up to date.
    public convenience init(sqlitePath path: String, migrate: Bool = true, synchronous: SQLiteSynchronous = .full) throws {
        let backend = try SQLiteBackend(path: path, synchronous: synchronous)
        if migrate { _ = try backend.runNow { try Migrations.migrate($0) } }
        self.init(backend: backend)
    }

    /// Runs `body` with a connection on the backend's own threads.
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        if let sqlite { return try await sqlite.run(body) }
        return try await backend.run(body)
    }

    /// Runs `body`, which only reads and may scan many rows, beside the writes (`SQLBackend.read`).
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await backend.read(body)
    }

    /// Closes the store's connections (PostgreSQL: the pool); later calls fail.
    public func close() async {
        await backend.close()
    }

    // MARK: VerificationStore

    public func insertSession(_ session: VerificationSession) async throws {
        try await run { db in try Self.insertSession(db, session) }
    }

    static func insertSession(_ db: any SQLConnection, _ session: VerificationSession) throws {
        try db.query(
            """
            INSERT INTO verification_sessions
              (id, project_id, phone_number, code_hash, created_at_ms, expires_at_ms, attempts, max_attempts, consumed_at_ms, job_id, region,
               session_info_sealed, client_key, credential_hash, purpose, code_sealed)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(session.id), .text(session.projectID), .text(session.phoneNumber), .blob(session.codeHash),
                .integer(session.createdAt.millisecondsSince1970), .integer(session.expiresAt.millisecondsSince1970),
                .integer(Int64(session.attempts)), .integer(Int64(session.maxAttempts)),
                session.consumedAt.map { .integer($0.millisecondsSince1970) } ?? .null,
                session.jobID.map { .text($0.lowercasedText) } ?? .null, .text(session.region),
                session.sessionInfoSealed.map(SQLValue.text) ?? .null, session.clientKey.map(SQLValue.text) ?? .null,
                session.credentialHash.map(SQLValue.text) ?? .null, .text(session.purpose.description),
                session.codeSealed.map(SQLValue.text) ?? .null,
            ])
    }

    public func deleteSession(id: String) async throws {
        try await run { db in
            try db.query("DELETE FROM verification_sessions WHERE id = ?", [.text(id)])
        }
    }

    static let sessionColumns =
        "id, project_id, phone_number, code_hash, created_at_ms, expires_at_ms, attempts, max_attempts, consumed_at_ms, job_id, region, session_info_sealed, client_key, credential_hash, purpose, code_sealed"

    public func reserveCheckAttempt(sessionID: String) async throws -> CodeCheckStateMachine.Reservation? {
        try await run { db in
            let reserved = try db.query(
                """
                UPDATE verification_sessions SET attempts = attempts + 1
                WHERE id = ? AND consumed_at_ms IS NULL AND attempts < max_attempts
                RETURNING \(Self.sessionColumns)
                """, [.text(sessionID)])
            if let row = reserved.first { return .init(session: try Self.session(row), reserved: true) }
            let current = try db.query("SELECT \(Self.sessionColumns) FROM verification_sessions WHERE id = ?", [.text(sessionID)])
            return try current.first.map { .init(session: try Self.session($0), reserved: false) }
        }
    }

    /// Under the number's lock, so two of its sessions signing in at once cannot both win (nor
    /// deadlock on each other's rows in PostgreSQL).
    public func consumeSession(id: String, at date: Date) async throws -> Bool {
        try await run { db in
            try db.transaction {
                let owner = try db.query("SELECT project_id, phone_number, purpose FROM verification_sessions WHERE id = ?", [.text(id)])
                guard let row = owner.first, let project = row[0].string, let phone = row[1].string, let purpose = row[2].string else {
                    return false
                }
                try db.lock("sessions:\(project):\(phone)")
                let consumed = try db.query(
                    "UPDATE verification_sessions SET consumed_at_ms = ?, verified = 1 WHERE id = ? AND consumed_at_ms IS NULL RETURNING id",
                    [.integer(date.millisecondsSince1970), .text(id)])
                guard consumed.isEmpty == false else { return false }
                try db.query(
                    """
                    UPDATE verification_sessions SET consumed_at_ms = ?
                    WHERE project_id = ? AND phone_number = ? AND purpose = ? AND consumed_at_ms IS NULL
                    """, [.integer(date.millisecondsSince1970), .text(project), .text(phone), .text(purpose)])
                return true
            }
        }
    }

    /// Deletes at most `limit` sessions that expired before `date` (they can only answer SESSION_EXPIRED
    /// until then).
    @discardableResult
    public func purgeSessions(expiredBefore date: Date, limit: Int) async throws -> Int {
        try await purgeExpired("verification_sessions", key: "id", by: "expires_at_ms", before: date, limit: limit)
    }

    /// Deletes at most `limit` rows of `table` whose `column` (an indexed time in milliseconds) is before
    /// `date`, the oldest first, in one statement. As one statement for all, a minute's expired sessions
    /// at 500 sends/s (30,000 rows) held SQLite's writer, every send, for 260–265 ms each minute
    /// (`herald-bench store`); a chunk is one short call among the writer's batches, and
    /// housekeeping paces the chunks (`PurgePacing`).
    func purgeExpired(_ table: String, key: String, by column: String, before date: Date, limit: Int) async throws -> Int {
        let sql = """
            DELETE FROM \(table) WHERE \(key) IN (SELECT \(key) FROM \(table) WHERE \(column) < ?1 ORDER BY \(column) LIMIT ?2)
            """
        return try await run { db in
            try db.query(sql, [.integer(date.millisecondsSince1970), .integer(Int64(max(1, limit)))])
            return db.changes
        }
    }

    public func latestOpenSession(projectID: String, phoneNumber: String) async throws -> VerificationSession? {
        try await run { db in
            try db.query(
                """
                SELECT \(Self.sessionColumns) FROM verification_sessions
                WHERE project_id = ? AND phone_number = ? AND consumed_at_ms IS NULL AND purpose = 'signIn'
                ORDER BY created_at_ms DESC LIMIT 1
                """, [.text(projectID), .text(phoneNumber)]
            ).first.map(Self.session)
        }
    }

    static func session(_ row: [SQLValue]) throws -> VerificationSession {
        guard row.count == 16, let id = row[0].string, let project = row[1].string, let phone = row[2].string,
            let hash = row[3].data, let created = row[4].int, let expires = row[5].int, let attempts = row[6].int,
            let maxAttempts = row[7].int
        else { throw StoreError(.failed, "malformed verification_sessions row") }
        return VerificationSession(
            id: id, projectID: project, phoneNumber: phone, codeHash: hash, createdAt: .init(milliseconds: created),
            expiresAt: .init(milliseconds: expires), attempts: Int(attempts), maxAttempts: Int(maxAttempts),
            consumedAt: row[8].int.map(Date.init(milliseconds:)), jobID: row[9].string.flatMap(UUID.init(parsing:)),
            sessionInfoSealed: row[11].string, clientKey: row[12].string, credentialHash: row[13].string,
            purpose: row[14].string.flatMap(SessionPurpose.init(stored:)) ?? .signIn, codeSealed: row[15].string
        )
        .with(region: row[10].string ?? "")
    }

    public func insertRefreshToken(_ record: RefreshTokenRecord) async throws {
        try await run { db in
            try db.query(
                "INSERT INTO refresh_tokens (token_hash, project_id, local_id, provider, created_at_ms) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(record.tokenHash), .text(record.projectID), .text(record.localID), .text(record.provider),
                    .integer(record.createdAt.millisecondsSince1970),
                ])
        }
    }

    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? {
        try await run { db in
            guard
                let row = try db.query(
                    "SELECT token_hash, project_id, local_id, provider, created_at_ms FROM refresh_tokens WHERE token_hash = ?", [.text(hash)]
                ).first,
                let tokenHash = row[0].string, let project = row[1].string, let localID = row[2].string,
                let provider = row[3].string, let created = row[4].int
            else { return nil }
            return RefreshTokenRecord(
                tokenHash: tokenHash, projectID: project, localID: localID, provider: provider, createdAt: .init(milliseconds: created))
        }
    }

    // MARK: DeliveryLedger

    @discardableResult
    public func recordPending(jobID: UUID, projectID: String, type: JobType, destination: String, producer: String?, now: Date) async throws
        -> Bool
    {
        try await run { db in
            try Self.recordPending(db, jobID: jobID, projectID: projectID, type: type, destination: destination, producer: producer, now: now)
            if db.changes == 1 { return true }
            let stored = try db.query("SELECT producer FROM deliveries WHERE job_id = ?", [.text(jobID.lowercasedText)]).first?[0].string
            return stored == producer
        }
    }

    public func recordPendingOnce(jobID: UUID, projectID: String, type: JobType, destination: String, now: Date) async throws
        -> DeliveryStatus?
    {
        try await run { db in
            try Self.recordPending(db, jobID: jobID, projectID: projectID, type: type, destination: destination, now: now)
            if db.changes == 1 { return nil }
            let stored = try db.query("SELECT status FROM deliveries WHERE job_id = ?", [.text(jobID.lowercasedText)]).first?[0].string
            guard let status = stored.flatMap(DeliveryStatus.init(rawValue:)) else {
                throw StoreError(.failed, "a delivery row that is neither new nor readable")
            }
            return status
        }
    }

    static func recordPending(
        _ db: any SQLConnection, jobID: UUID, projectID: String, type: JobType, destination: String, producer: String? = nil, now: Date
    ) throws {
        try db.query(
            """
            INSERT INTO deliveries (job_id, project_id, type, destination, status, attempts, created_at_ms, updated_at_ms, producer)
            VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?)
            ON CONFLICT (job_id) DO NOTHING
            """,
            [
                .text(jobID.lowercasedText), .text(projectID), .text(type.rawValue), .text(destination),
                .integer(now.millisecondsSince1970), .integer(now.millisecondsSince1970), Self.optional(producer),
            ])
    }

    public func claimDelivery(
        jobID: UUID, projectID: String, type: JobType, destination: String, owner: String, description: DeliveryDescription, now: Date,
        reclaimInDoubt: Bool
    ) async throws -> DeliveryClaim {
        if let batcher {
            let row = try await batcher.submit(
                .claim(
                    jobID: jobID, projectID: projectID, type: type, destination: destination, owner: owner, description: description, now: now,
                    reclaimInDoubt: reclaimInDoubt)
            ).row
            let note = row.count == 7 ? row[6].string : nil
            switch row.first?.string {
            case "claimed": if let attempts = row[1].int { return .claimed(attempt: Int(attempts)) }
            case "unknown": return .unknown
            case "mismatch": return .mismatch(field: note ?? "?")
            case "inDoubt": return .inDoubt(owner: note ?? "unknown")
            case "finished": if let status = note.flatMap(DeliveryStatus.init(rawValue:)) { return .finished(status) }
            default: break
            }
            throw StoreError(.failed, "herald_batch_v8 answered a malformed claim")
        }
        let id = jobID.lowercasedText
        let claimable = Self.statusIsOneOf(reclaimInDoubt ? [.pending, .retrying, .throttled, .sending] : [.pending, .retrying, .throttled])
        let event = Self.claimEvent(owner: owner, now: now)
        return try await run { db in
            // Not `RETURNING attempts`: SQLite gathers an UPDATE's RETURNING rows in a temporary B-tree it
            // opens for each run of the statement (as it does for the IN list `statusIsOneOf` replaces).
            // The row is read back by its key in the same transaction instead, and that read also answers
            // when nothing was claimed.
            _ = try db.query(
                """
                UPDATE deliveries SET status = 'sending', owner = ?, attempts = attempts + 1, updated_at_ms = ?,
                  template = COALESCE(?, template), locale = COALESCE(?, locale), provider = COALESCE(?, provider),
                  events = COALESCE(events, '') || ? || (attempts + 1) || ?
                WHERE job_id = ? AND project_id = ? AND type = ? AND destination = ? AND producer IS ? AND \(claimable)
                """,
                [
                    .text(owner), .integer(now.millisecondsSince1970), Self.optional(description.template), Self.optional(description.locale),
                    Self.optional(description.provider), .text(event.head), .text(event.tail),
                    .text(id), .text(projectID), .text(type.rawValue), .text(destination), Self.optional(description.producer),
                ])
            let updated = db.changes == 1
            guard
                let row = try db.query(
                    "SELECT status, owner, project_id, type, destination, attempts, producer FROM deliveries WHERE job_id = ?", [.text(id)]
                ).first, let status = row[0].string.flatMap(DeliveryStatus.init(rawValue:))
            else { return .unknown }
            if updated, let attempts = row[5].int { return .claimed(attempt: Int(attempts)) }
            for (field, stored, claimed) in [
                ("project", row[2].string, projectID), ("type", row[3].string, type.rawValue), ("to", row[4].string, destination),
                ("producer", row[6].string, description.producer),
            ] as [(String, String?, String?)]
            where stored != claimed {
                return .mismatch(field: field)
            }
            if status == .sending { return .inDoubt(owner: row[1].string ?? "unknown") }
            return .finished(status)
        }
    }

    /// A claim's event line around the attempt number, which only the UPDATE knows:
    /// `<ms>\tsending\tattempt ` + n + ` by <owner>\n`.
    static func claimEvent(owner: String, now: Date) -> (head: String, tail: String) {
        let line = MessageEvent(status: .sending, at: now, detail: "attempt # by \(owner)").storedLine
        // Cut at the first '#' by its byte (every claim; Foundation's `components(separatedBy:)` and a
        // join back were 1.6 % of a draining worker's CPU).
        guard let mark = line.utf8.firstIndex(of: UInt8(ascii: "#")) else { return (line, "") }
        return (String(line[..<mark]), String(line[line.utf8.index(after: mark)...]))
    }

    static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }

    /// `(status = 'a' OR status = 'b' …)`. SQLite builds a temporary index for a constant `IN` list of
    /// three or more values each time a statement runs, and each temporary B-tree (this, or an UPDATE's
    /// `RETURNING` rows) is opened, created and freed again: with both in every claim they were about
    /// 7 % of a draining worker's instructions per job (`herald-bench instructions`).
    static func statusIsOneOf(_ statuses: [DeliveryStatus]) -> String {
        "(" + statuses.map { "status = '\($0.rawValue)'" }.joined(separator: " OR ") + ")"
    }

    /// A provider's receipt can arrive before the worker records that the gateway accepted the SMS:
    /// an outcome never overwrites delivered or undelivered (its event is still added). And `uncertain`
    /// only replaces `sending`: a copy of a job that found it in doubt (another attempt was still
    /// sending) records it after that attempt may already have recorded `sent`, which must stand, or an
    /// operator would be asked to settle a message that was sent. Both stores and the memory model
    /// keep these rules (`herald_batch_v8` on PostgreSQL).
    public func recordDelivery(
        jobID: UUID, status: DeliveryStatus, reason: String?, segments: SMSSegments?, providerMessageID: String?, detail: String?, now: Date
    ) async throws {
        let event = MessageEvent(status: MessageStatus(status), at: now, detail: detail ?? reason).storedLine
        if let batcher {
            _ = try await batcher.submit(
                .record(
                    jobID: jobID, status: status, reason: reason, segments: segments, providerMessageID: providerMessageID, event: event, now: now))
            return
        }
        try await run { db in
            try db.query(
                """
                UPDATE deliveries SET status = CASE WHEN status IN ('delivered', 'undelivered') THEN status
                    WHEN ?1 = 'uncertain' AND status <> 'sending' THEN status ELSE ?1 END,
                  reason = CASE WHEN status IN ('delivered', 'undelivered') THEN reason
                    WHEN ?1 = 'uncertain' AND status <> 'sending' THEN reason ELSE ?2 END, updated_at_ms = ?3,
                  segments = COALESCE(?4, segments), encoding = COALESCE(?5, encoding),
                  provider_message_id = COALESCE(?6, provider_message_id), events = COALESCE(events, '') || ?7
                WHERE job_id = ?8
                """,
                [
                    .text(status.rawValue), Self.optional(reason), .integer(now.millisecondsSince1970),
                    segments.map { .integer(Int64($0.segments)) } ?? .null, segments.map { .text($0.encoding.rawValue) } ?? .null,
                    Self.optional(providerMessageID), .text(event), .text(jobID.lowercasedText),
                ])
        }
    }

    public func noteDelivery(jobID: UUID, status: MessageStatus, detail: String?, now: Date) async throws {
        let event = MessageEvent(status: status, at: now, detail: detail).storedLine
        try await run { db in
            try db.query(
                "UPDATE deliveries SET events = COALESCE(events, '') || ? WHERE job_id = ?", [.text(event), .text(jobID.lowercasedText)])
        }
    }

    /// The segments recorded for a sent SMS (support and tests: what the provider will bill).
    public func recordedSegments(jobID: UUID) async throws -> (segments: Int, encoding: String)? {
        try await run { db in
            guard
                let row = try db.query(
                    "SELECT segments, encoding FROM deliveries WHERE job_id = ?", [.text(jobID.lowercasedText)]
                ).first, let segments = row[0].int, let encoding = row[1].string
            else { return nil }
            return (Int(segments), encoding)
        }
    }

    public func deliveryStatus(jobID: UUID) async throws -> (status: DeliveryStatus, reason: String?, attempts: Int)? {
        try await run { db in
            guard
                let row = try db.query(
                    "SELECT status, reason, attempts FROM deliveries WHERE job_id = ?", [.text(jobID.lowercasedText)]
                ).first, let status = row[0].string.flatMap(DeliveryStatus.init(rawValue:))
            else { return nil }
            return (status, row[1].string, Int(row[2].int ?? 0))
        }
    }
}

extension VerificationSession {
    func with(region: String) -> VerificationSession {
        var copy = self
        copy.region = region
        return copy
    }
}

extension Date {
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
