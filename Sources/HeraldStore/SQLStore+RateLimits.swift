import Foundation
import HeraldCore

/// Rate limits in SQL. The decision is the single statement below (PostgreSQL spells `max` as
/// `GREATEST`); the row lock the upsert takes makes it atomic across processes and hosts:
///
///     INSERT INTO rate_limits (key, tat_us) VALUES (:key, :now + :T)
///     ON CONFLICT (key) DO UPDATE SET tat_us = max(rate_limits.tat_us, :now) + :T
///       WHERE max(rate_limits.tat_us, :now) + :T - :now <= :tau
///     RETURNING tat_us
///
/// A fresh key always allows one event (τ ≥ T). No row returned means "refused"; nothing was written,
/// and the TAT read afterwards only computes Retry-After.
extension SQLStore {
    public func rateDecision(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> GCRA.Decision {
        try await run { db in try Self.decide(db, key: key, parameters: parameters, now: now) }
    }

    public func rateDecisions(_ entries: [(key: String, parameters: GCRA.Parameters)], now: Int64) async throws -> (
        index: Int, decision: GCRA.Decision
    )? {
        try await run { db in try db.transaction { try Self.decide(db, entries, now: now) } }
    }

    /// Inside a transaction: every entry decided, all or nothing. Rows are locked in key order, the
    /// same in every process, so two requests sharing keys never wait on each other in a cycle
    /// (PostgreSQL would abort one as a deadlock). The answer is the one checking in the caller's order
    /// gives: the first refusing entry, with nothing spent; keys are independent, so only entries
    /// before it need deciding.
    ///
    /// Distinct keys (every send's limits) are decided by one statement, `decideAll`: one statement
    /// instead of one per key was the larger part of the decisions' cost. Each entry there is decided
    /// as the single statement would; when one refuses, the others are refunded, which leaves them as
    /// they were (a refund takes back exactly the one interval the decision added).
    static func decide(_ db: any SQLConnection, _ entries: [(key: String, parameters: GCRA.Parameters)], now: Int64) throws -> (
        index: Int, decision: GCRA.Decision
    )? {
        // Key order is the lock order; neighbours in it are equal exactly when a key is listed twice.
        let order = entries.indices.sorted { entries[$0].key < entries[$1].key }
        if entries.count > 1, entries.count <= maximumKeysPerStatement,
            zip(order, order.dropFirst()).allSatisfy({ entries[$0].key != entries[$1].key })
        {
            return try decideAll(db, entries, order: order, now: now)
        }
        return try decideOneByOne(db, entries, order: order, now: now)
    }

    /// One statement per key, in key order (`order`, the indices of `entries` sorted by key), up to the
    /// first refusal in the caller's order; the keys spent before it are refunded.
    private static func decideOneByOne(
        _ db: any SQLConnection, _ entries: [(key: String, parameters: GCRA.Parameters)], order: [Int], now: Int64
    ) throws -> (index: Int, decision: GCRA.Decision)? {
        var refusal: (index: Int, decision: GCRA.Decision)?
        var spent: [Int] = []
        for index in order where index < refusal?.index ?? entries.count {
            let decision = try decide(db, key: entries[index].key, parameters: entries[index].parameters, now: now)
            if decision.allowed { spent.append(index) } else { refusal = (index, decision) }
        }
        guard let refusal else { return nil }
        for index in spent { try refund(db, key: entries[index].key, parameters: entries[index].parameters, now: now) }
        return refusal
    }

    public func rateReserve(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> Int64 {
        let rows = try await backend.statement(
            """
            INSERT INTO rate_limits (key, tat_us) VALUES (?1, ?2 + ?3)
            ON CONFLICT (key) DO UPDATE SET tat_us = \(dialect.greatest("rate_limits.tat_us", "?2")) + ?3
            RETURNING tat_us
            """, [.text(key), .integer(now), .integer(parameters.interval)])
        guard let tat = rows.first?.first?.int else { throw StoreError(.failed, "rate_limits reservation returned no row") }
        return max(now, tat - parameters.tolerance)
    }

    public func rateRefund(key: String, parameters: GCRA.Parameters, now: Int64) async throws {
        try await run { db in try Self.refund(db, key: key, parameters: parameters, now: now) }
    }

    static func decide(_ db: any SQLConnection, key: String, parameters: GCRA.Parameters, now: Int64) throws -> GCRA.Decision {
        let allowed = try db.query(
            db.dialect == .sqlite ? decideInSQLite : decideInPostgres,
            [.text(key), .integer(now), .integer(parameters.interval), .integer(parameters.tolerance)])
        if let tat = allowed.first?[0].int { return GCRA.Decision(allowed: true, tat: tat, retryAfter: 0) }
        return try refusal(db, key: key, parameters: parameters, now: now)
    }

    /// A refused key's decision: nothing was written, and its TAT is read only for Retry-After.
    private static func refusal(_ db: any SQLConnection, key: String, parameters: GCRA.Parameters, now: Int64) throws -> GCRA.Decision {
        let tat = try db.query("SELECT tat_us FROM rate_limits WHERE key = ?", [.text(key)]).first?[0].int ?? now
        return GCRA.Decision(allowed: false, tat: tat, retryAfter: max(tat, now) + parameters.interval - parameters.tolerance - now)
    }

    /// The decision's statement in each dialect, built once (six run per send).
    static let decideInSQLite = decideStatement(.sqlite)
    static let decideInPostgres = decideStatement(.postgres)

    private static func decideStatement(_ dialect: SQLDialect) -> String {
        let later = dialect.greatest("rate_limits.tat_us", "?2")
        return """
            INSERT INTO rate_limits (key, tat_us) VALUES (?1, ?2 + ?3)
            ON CONFLICT (key) DO UPDATE SET tat_us = \(later) + ?3
            WHERE \(later) + ?3 - ?2 <= ?4
            RETURNING tat_us
            """
    }

    /// Every entry in one upsert, rows in key order (the lock order above). Per row it is the single
    /// statement: the interval is the inserted TAT less `now`, the tolerance looked up by key.
    ///
    /// PostgreSQL's statement returns the entries allowed; the first entry (in the caller's order)
    /// missing is the answer. SQLite's returns nothing: its RETURNING collects rows in a temporary
    /// B-tree, and opening and closing that (a pager of its own) was a third of the statement's cost.
    /// A refused row sets the TAT to NULL instead, which breaks its NOT NULL constraint, and SQLite
    /// undoes the whole statement (its statement journal; the transaction goes on). A refusal is then
    /// decided again one key at a time, the rare path, which finds the same first refusal.
    private static func decideAll(
        _ db: any SQLConnection, _ entries: [(key: String, parameters: GCRA.Parameters)], order: [Int], now: Int64
    ) throws -> (index: Int, decision: GCRA.Decision)? {
        var bindings: [SQLValue] = [.integer(now)]
        bindings.reserveCapacity(1 + 3 * entries.count)
        for index in order {
            let (key, parameters) = entries[index]
            bindings += [.text(key), .integer(parameters.interval), .integer(parameters.tolerance)]
        }
        if db.dialect == .sqlite {
            do {
                try db.query(decideAllStatement(.sqlite, keys: entries.count), bindings)
                return nil
            } catch let error as StoreError where error.kind == .notNull(Self.refusedColumn) {
                return try decideOneByOne(db, entries, order: order, now: now)
            }
        }
        let allowed = Set(try db.query(decideAllStatement(db.dialect, keys: entries.count), bindings).compactMap { $0.first?.string })
        guard let refused = entries.indices.first(where: { allowed.contains(entries[$0].key) == false }) else { return nil }
        for (key, parameters) in entries where allowed.contains(key) { try refund(db, key: key, parameters: parameters, now: now) }
        return (refused, try refusal(db, key: entries[refused].key, parameters: entries[refused].parameters, now: now))
    }

    /// Sends check six keys; a lease or a caller with more falls back to one statement per key.
    static let maximumKeysPerStatement = 16

    /// `decideAll`'s statement for `keys` rows, built once per dialect and count: `?1` is now, then
    /// key, interval and tolerance for each row.
    static func decideAllStatement(_ dialect: SQLDialect, keys: Int) -> String {
        (dialect == .sqlite ? decideAllInSQLite : decideAllInPostgres)[keys]
    }

    private static let decideAllInSQLite = (0...maximumKeysPerStatement).map { buildDecideAll(.sqlite, keys: $0) }
    private static let decideAllInPostgres = (0...maximumKeysPerStatement).map { buildDecideAll(.postgres, keys: $0) }

    private static func buildDecideAll(_ dialect: SQLDialect, keys: Int) -> String {
        guard keys > 0 else { return "" }
        let rows = (0..<keys).map { "(?\(2 + 3 * $0), ?1 + ?\(3 + 3 * $0))" }.joined(separator: ", ")
        let tolerances = (0..<keys).map { "WHEN ?\(2 + 3 * $0) THEN ?\(4 + 3 * $0)" }.joined(separator: " ")
        let later = dialect.greatest("rate_limits.tat_us", "?1")
        let next = "\(later) + (excluded.tat_us - ?1)"
        let allowed = "\(next) - ?1 <= CASE excluded.key \(tolerances) END"
        if dialect == .sqlite {
            return """
                INSERT INTO rate_limits (key, tat_us) VALUES \(rows)
                ON CONFLICT (key) DO UPDATE SET tat_us = CASE WHEN \(allowed) THEN \(next) END
                """
        }
        return """
            INSERT INTO rate_limits (key, tat_us) VALUES \(rows)
            ON CONFLICT (key) DO UPDATE SET tat_us = \(next)
            WHERE \(allowed)
            RETURNING key
            """
    }

    /// SQLite's message when `decideAll` refuses: the NOT NULL error naming the column it set to NULL.
    static let refusedColumn = "NOT NULL constraint failed: rate_limits.tat_us"

    static func refund(_ db: any SQLConnection, key: String, parameters: GCRA.Parameters, now: Int64) throws {
        try db.query(
            "UPDATE rate_limits SET tat_us = \(db.dialect.greatest("?2", "tat_us - ?3")) WHERE key = ?1",
            [.text(key), .integer(now), .integer(parameters.interval)])
    }

    public func rateStates(kind: String, subject: String, project: String?) async throws -> [(key: String, tat: Int64)] {
        try await read { db in try Self.matchingRates(db, kind: kind, subject: subject, project: project) }
    }

    /// Found beside the writes (without a project, every key of the kind is read), then deleted by key
    /// in one short transaction. A key first written between the two was spent after the reset began
    /// and stays.
    public func resetRates(kind: String, subject: String, project: String?) async throws -> Int {
        let keys = try await read { db in try Self.matchingRates(db, kind: kind, subject: subject, project: project).map(\.key) }
        guard keys.isEmpty == false else { return 0 }
        return try await run { db in
            var deleted = 0
            for key in keys {
                try db.query("DELETE FROM rate_limits WHERE key = ?", [.text(key)])
                deleted += db.changes
            }
            return deleted
        }
    }

    /// A key is `kind:project:subject|policy`: with the project, its keys are one range of the primary
    /// key's index; without, one such range per project that holds keys of the kind (`scopes`). A
    /// range rather than `LIKE`, which SQLite answers by reading the whole table (its `LIKE` ignores
    /// ASCII case, so the binary index cannot serve it); both stores compare keys by bytes.
    static func matchingRates(_ db: any SQLConnection, kind: String, subject: String, project: String?) throws -> [(key: String, tat: Int64)] {
        guard let project else {
            return try scopes(db, kind: kind).flatMap { try matchingRates(db, kind: kind, subject: subject, project: $0) }
        }
        let prefix = "\(kind):\(project):\(subject)|"
        let rows = try db.query(
            "SELECT key, tat_us FROM rate_limits WHERE key >= ? AND key < ? ORDER BY key", [.text(prefix), .text(Self.keysAfter(prefix))])
        return rows.compactMap { row in
            guard let key = row[0].string, let tat = row[1].int, let parts = LimitCheck.parse(key), parts.kind == kind,
                parts.subject == subject, parts.project == project
            else { return nil }
            return (key, tat)
        }
    }

    /// The projects (a provider's name, for its keys) that hold keys of `kind`, each found by one probe
    /// of the index from the end of the one before: a lookup without a project read every key of the
    /// kind instead, which on a store in service is most of the table (two keys per number sent to in
    /// the last day, by default), all of them carried into the process that asked.
    static func scopes(_ db: any SQLConnection, kind: String) throws -> [String] {
        let end = keysAfter("\(kind):")
        var from = "\(kind):"
        var scopes: [String] = []
        while let key = try db.query("SELECT key FROM rate_limits WHERE key >= ? AND key < ? ORDER BY key LIMIT 1", [.text(from), .text(end)])
            .first?.first?.string
        {
            guard let scope = LimitCheck.parse(key)?.project else {
                // Not a key Herald writes: step over it (no stored text sorts between it and this one).
                from = key + "\u{1}"
                continue
            }
            scopes.append(scope)
            from = keysAfter("\(kind):\(scope):")
        }
        return scopes
    }

    /// The first text after every text that starts with `prefix`, which ends in `:` or `|` (ASCII):
    /// the same with that last byte one higher.
    static func keysAfter(_ prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        bytes[bytes.count - 1] += 1
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One step of housekeeping's walk, one short transaction: the keys are read by the primary key
    /// (there is no index on `tat_us`: it cost every send more than it saved this purge).
    public func purgeRates(after key: String, limit: Int, before now: Int64) async throws -> RateKeyChunk {
        try await run { db in
            try db.transaction {
                let chunk = "SELECT key FROM rate_limits WHERE key > ?1 ORDER BY key LIMIT ?2"
                let row = try db.query("SELECT count(*), max(key) FROM (\(chunk)) AS chunk", [.text(key), .integer(Int64(max(1, limit)))]).first
                guard let last = row?[1].string, let walked = row?[0].int, walked > 0 else { return RateKeyChunk(walked: 0, deleted: 0, last: nil) }
                try db.query("DELETE FROM rate_limits WHERE key > ?1 AND key <= ?2 AND tat_us < ?3", [.text(key), .text(last), .integer(now)])
                return RateKeyChunk(walked: Int(walked), deleted: db.changes, last: last)
            }
        }
    }

    /// Read, decide in `PrefixVelocity` (pure), write back: one transaction holding the prefix's lock
    /// (the row may not exist yet), so concurrent sends from several processes count every event.
    public func observePrefix(projectID: String, prefix: String, settings: PrefixVelocity.Settings, now: Date) async throws -> Bool {
        try await run { db in
            try db.transaction { try Self.observePrefix(db, projectID: projectID, prefix: prefix, settings: settings, now: now) }
        }
    }

    /// Inside a transaction: read, decide in `PrefixVelocity` (pure), write back, holding the prefix's
    /// lock (the row may not exist yet), so concurrent sends from several processes count every event.
    static func observePrefix(_ db: any SQLConnection, projectID: String, prefix: String, settings: PrefixVelocity.Settings, now: Date) throws -> Bool
    {
        try db.lock("prefix_velocity:\(projectID):\(prefix)")
        let stored = try db.query(
            "SELECT window_start_us, count, baseline FROM prefix_velocity WHERE project_id = ? AND prefix = ?",
            [.text(projectID), .text(prefix)]
        ).first.flatMap { row -> PrefixVelocity? in
            guard let start = row[0].int, let count = row[1].int else { return nil }
            return PrefixVelocity(windowStart: start, count: Int(count), baseline: row[2].double ?? 0)
        }
        return try observePrefix(db, projectID: projectID, prefix: prefix, settings: settings, now: now, stored: stored)
    }

    /// Decides from `stored`, the prefix's velocity row as this transaction read it while holding the
    /// prefix's lock (on SQLite, the write lock of any transaction), and writes the next one back.
    static func observePrefix(
        _ db: any SQLConnection, projectID: String, prefix: String, settings: PrefixVelocity.Settings, now: Date, stored: PrefixVelocity?
    ) throws -> Bool {
        let micros = now.microsecondsSince1970
        let (next, trips) = PrefixVelocity.observe(stored, now: micros, settings: settings)
        try db.query(
            """
            INSERT INTO prefix_velocity (project_id, prefix, window_start_us, count, baseline) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (project_id, prefix) DO UPDATE SET
              window_start_us = excluded.window_start_us, count = excluded.count, baseline = excluded.baseline
            """, [.text(projectID), .text(prefix), .integer(next.windowStart), .integer(Int64(next.count)), .real(next.baseline)])
        guard trips else { return false }
        let reason = PrefixBlock.reason(tripped: next, settings: settings)
        try db.query(
            """
            INSERT INTO prefix_blocks (project_id, prefix, until_us, reason, created_us) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (project_id, prefix) DO UPDATE SET until_us = excluded.until_us, reason = excluded.reason, created_us = excluded.created_us
            """, [.text(projectID), .text(prefix), .integer(micros + settings.blockFor.microseconds), .text(reason), .integer(micros)])
        return true
    }

    public func prefixBlock(projectID: String, prefix: String, now: Date) async throws -> PrefixBlock? {
        try await run { db in try Self.prefixBlock(db, projectID: projectID, prefix: prefix, now: now) }
    }

    static func prefixBlock(_ db: any SQLConnection, projectID: String, prefix: String, now: Date) throws -> PrefixBlock? {
        try db.query(
            "SELECT project_id, prefix, until_us, reason, created_us FROM prefix_blocks WHERE project_id = ? AND prefix = ? AND until_us > ?",
            [.text(projectID), .text(prefix), .integer(now.microsecondsSince1970)]
        ).first.flatMap(Self.block)
    }

    public func prefixBlocks(now: Date) async throws -> [PrefixBlock] {
        try await read { db in
            try db.query(
                "SELECT project_id, prefix, until_us, reason, created_us FROM prefix_blocks WHERE until_us > ? ORDER BY project_id, prefix",
                [.integer(now.microsecondsSince1970)]
            ).compactMap(Self.block)
        }
    }

    public func liftPrefixBlock(projectID: String, prefix: String) async throws -> Bool {
        try await run { db in
            try db.transaction {
                try db.query("DELETE FROM prefix_blocks WHERE project_id = ? AND prefix = ?", [.text(projectID), .text(prefix)])
                let lifted = db.changes > 0
                // Start counting afresh, or the next send would trip again at once.
                try db.query("DELETE FROM prefix_velocity WHERE project_id = ? AND prefix = ?", [.text(projectID), .text(prefix)])
                return lifted
            }
        }
    }

    static func block(_ row: [SQLValue]) -> PrefixBlock? {
        guard let project = row[0].string, let prefix = row[1].string, let until = row[2].int, let reason = row[3].string,
            let created = row[4].int
        else { return nil }
        return PrefixBlock(
            projectID: project, prefix: prefix, until: Date(timeIntervalSince1970: Double(until) / 1_000_000), reason: reason,
            createdAt: Date(timeIntervalSince1970: Double(created) / 1_000_000))
    }

    /// The conversion report's statement: the id floor of `since` (`?1`) and `since` in milliseconds
    /// (`?2`).
    /// Each session's provider is its delivery's (a lookup by the ledger's key per session).
    static let conversionQuery = """
        SELECT s.created_at_ms / 60000 AS minute, s.region, COALESCE(d.provider, '') AS via, count(*),
          count(CASE WHEN s.verified = 1 THEN 1 END), max(s.expires_at_ms - s.created_at_ms)
        FROM verification_sessions s LEFT JOIN deliveries d ON d.job_id = s.job_id
        WHERE s.id >= ?1 AND s.created_at_ms >= ?2 AND s.job_id IS NOT NULL AND s.region <> ''
        GROUP BY minute, s.region, via ORDER BY minute, s.region, via
        """

    /// Sessions are found by the creation time their ids start with (`SessionToken.storageIDFloor`): a
    /// range of the primary key, where an index of the creation time cost every send an entry. A session
    /// stored under an id without the time (made before ids carried it) is not counted.
    public func conversion(since: Date) async throws -> [ConversionCount] {
        try await read { db in
            try db.query(
                Self.conversionQuery, [.text(SessionToken.storageIDFloor(createdAt: since)), .integer(since.millisecondsSince1970)]
            ).compactMap { row in
                guard let minute = row[0].int, let region = row[1].string, let provider = row[2].string, let sent = row[3].int,
                    let verified = row[4].int
                else { return nil }
                return ConversionCount(
                    minute: minute, region: region, provider: provider, sent: Int(sent), verified: Int(verified), longestLife: row[5].int ?? 0)
            }
        }
    }
}
