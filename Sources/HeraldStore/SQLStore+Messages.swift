import Foundation
import HeraldCore

/// The ledger as operators read it (`MessageLedger`): the same statements on SQLite and PostgreSQL.
extension SQLStore {
    static let messageColumns = """
        job_id, project_id, type, destination, template, locale, status, attempts, provider, provider_message_id, producer,
        segments, encoding, reason, created_at_ms, updated_at_ms, events
        """

    public func message(id: UUID) async throws -> MessageRecord? {
        try await read { db in
            try db.query("SELECT \(Self.messageColumns) FROM deliveries WHERE job_id = ?", [.text(id.lowercasedText)])
                .first.flatMap(Self.message)
        }
    }

    /// Newest first by (created, id); the cursor continues strictly after the last row shown. With
    /// `to`, the (destination, created) index serves it; without, the created index.
    public func messages(_ query: MessageQuery) async throws -> MessagePage {
        var conditions: [String] = []
        var bindings: [SQLValue] = []
        if let to = query.to {
            conditions.append("destination = ?")
            bindings.append(.text(to))
        }
        if let statuses = query.statuses {
            guard statuses.isEmpty == false else { return MessagePage(messages: [], next: nil) }
            conditions.append("status IN (\(Array(repeating: "?", count: statuses.count).joined(separator: ", ")))")
            bindings += statuses.map { .text($0.rawValue) }
        }
        if let type = query.type {
            conditions.append("type = ?")
            bindings.append(.text(type.rawValue))
        }
        if let project = query.project {
            conditions.append("project_id = ?")
            bindings.append(.text(project))
        }
        if let since = query.since {
            conditions.append("created_at_ms >= ?")
            bindings.append(.integer(since.millisecondsSince1970))
        }
        if let after = query.after {
            conditions.append("(created_at_ms < ? OR (created_at_ms = ? AND job_id < ?))")
            bindings += [.integer(after.createdMs), .integer(after.createdMs), .text(after.id)]
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let pageSize = query.pageSize
        bindings.append(.integer(Int64(pageSize + 1)))
        let sql = "SELECT \(Self.messageColumns) FROM deliveries \(filter) ORDER BY created_at_ms DESC, job_id DESC LIMIT ?"
        let values = bindings
        let rows = try await read { db in try db.query(sql, values) }
        let messages = rows.prefix(pageSize).compactMap(Self.message)
        let next =
            rows.count > pageSize
            ? messages.last.map { MessageCursor(createdMs: $0.createdAt.millisecondsSince1970, id: $0.id.lowercasedText) } : nil
        return MessagePage(messages: messages, next: next)
    }

    public func oldestWaiting(type: JobType) async throws -> Date? {
        try await read { db in
            try db.query(
                "SELECT MIN(created_at_ms) FROM deliveries WHERE status IN ('pending', 'retrying', 'throttled') AND type = ?", [.text(type.rawValue)]
            ).first?.first?.int.map { Date(milliseconds: $0) }
        }
    }

    public func purgeMessages(updatedBefore date: Date, limit: Int) async throws -> Int {
        try await run { db in
            try db.query(
                "DELETE FROM deliveries WHERE job_id IN (\(Self.purgeCandidates)) RETURNING job_id",
                [.integer(date.millisecondsSince1970), .integer(Int64(max(1, limit)))]
            ).count
        }
    }

    /// The rows a purge pass deletes: `?1` the cutoff, `?2` how many. A row changes after it is created,
    /// never before, so every row unchanged since the cutoff was also created before it, and the range
    /// is read from `deliveries_created`. Asked by `updated_at_ms` alone, which no index leads with,
    /// each pass (every minute, in every herald-api) read the whole ledger: 30 days of it by default.
    static let purgeCandidates = """
        SELECT job_id FROM deliveries WHERE created_at_ms < ?1 AND updated_at_ms < ?1 ORDER BY created_at_ms LIMIT ?2
        """

    public func applyReceipt(
        jobID: UUID, status: DeliveryStatus, segment: String?, providerMessageID: String?, errorCode: String?, now: Date
    ) async throws -> ReceiptResult {
        let id = jobID.lowercasedText
        let (status, reason, event) = Self.receipt(status, errorCode: errorCode, now: now)
        return try await run { db in
            try db.transaction {
                // Locked for the read: two segments' receipts at once must both be counted.
                let lock = db.dialect == .postgres ? " FOR UPDATE" : ""
                guard
                    let row = try db.query(
                        "SELECT status, destination, segments, receipt_segments FROM deliveries WHERE job_id = ? AND type = 'sms'\(lock)", [.text(id)]
                    ).first, let stored = row[0].string.flatMap(DeliveryStatus.init(rawValue:))
                else { return .unknown }
                guard ReceiptResult.receivable.contains(stored) else {
                    guard ReceiptResult.final.contains(stored) else { return .notSent(stored) }
                    if stored == status { return .repeated(stored) }
                    try db.query(
                        "UPDATE deliveries SET events = COALESCE(events, '') || ? WHERE job_id = ?",
                        [.text(Self.lateReceipt(status, final: stored, errorCode: errorCode, now: now)), .text(id)])
                    return .late(final: stored)
                }
                if status == .delivered, let segment, let progress = Self.segmentProgress(row[3].string, adding: segment, of: row[2].int) {
                    try db.query(
                        "UPDATE deliveries SET receipt_segments = ?, updated_at_ms = ?, events = COALESCE(events, '') || ? WHERE job_id = ?",
                        [
                            .text(progress.list), .integer(now.millisecondsSince1970),
                            .text(Self.segmentEvent(progress.delivered, of: progress.total, now: now)), .text(id),
                        ])
                    return .partial(delivered: progress.delivered, of: progress.total)
                }
                try db.query(
                    """
                    UPDATE deliveries SET status = ?, reason = ?, updated_at_ms = ?, provider_message_id = COALESCE(provider_message_id, ?),
                      events = COALESCE(events, '') || ?
                    WHERE job_id = ?
                    """,
                    [
                        .text(status.rawValue), Self.optional(reason), .integer(now.millisecondsSince1970), Self.optional(providerMessageID),
                        .text(event), .text(id),
                    ])
                return .applied(destination: row[1].string ?? "")
            }
        }
    }

    /// After a delivered segment's receipt: the segments delivered so far with this one, unless that
    /// makes all of them (nil: the message is delivered). `recorded` is the worker's segment count (a
    /// receipt that arrives before it counts the message as one segment).
    static func segmentProgress(_ stored: String?, adding segment: String, of recorded: Int64?) -> (list: String, delivered: Int, total: Int)? {
        let total = Int(recorded ?? 1)
        var seen = stored.map { $0.split(separator: ",").map(String.init) } ?? []
        let clean = String(segment.prefix(64)).replacingOccurrences(of: ",", with: "_")
        if seen.contains(clean) == false { seen.append(clean) }
        guard seen.count < total else { return nil }
        return (seen.joined(separator: ","), seen.count, total)
    }

    static func segmentEvent(_ delivered: Int, of total: Int, now: Date) -> String {
        MessageEvent(status: .sent, at: now, detail: "receipt from the provider: segment \(delivered) of \(total) delivered").storedLine
    }

    public func keepUncertainJob(jobID: UUID, body: Data) async throws {
        try await run { db in
            try db.query("UPDATE deliveries SET job_body = ? WHERE job_id = ?", [.blob(body), .text(jobID.lowercasedText)])
        }
    }

    public func uncertainJob(jobID: UUID) async throws -> Data? {
        try await run { db in
            guard
                case .blob(let body) = try db.query(
                    "SELECT job_body FROM deliveries WHERE job_id = ? AND status = 'uncertain'", [.text(jobID.lowercasedText)]
                ).first?.first
            else { return nil }
            return body
        }
    }

    public func resolveUncertain(jobID: UUID, resolution: UncertainResolution, decidedBy: String, now: Date) async throws -> Bool {
        let (status, line) = Self.resolution(resolution, decidedBy: decidedBy, now: now)
        return try await run { db in
            try db.query(
                """
                UPDATE deliveries SET status = ?, reason = NULL, updated_at_ms = ?, job_body = NULL, events = COALESCE(events, '') || ?
                WHERE job_id = ? AND status = 'uncertain'
                RETURNING job_id
                """,
                [.text(status.rawValue), .integer(now.millisecondsSince1970), .text(line), .text(jobID.lowercasedText)]
            ).isEmpty == false
        }
    }

    /// The status and event line of an operator's resolution (the same in every store).
    static func resolution(_ resolution: UncertainResolution, decidedBy: String, now: Date) -> (DeliveryStatus, String) {
        switch resolution {
        case .sent:
            (.sent, MessageEvent(status: .sent, at: now, detail: "resolved by \(decidedBy): the provider confirms it went out").storedLine)
        case .resend:
            (.pending, MessageEvent(status: .queued, at: now, detail: "resolved by \(decidedBy): sent again, once").storedLine)
        }
    }

    /// A receipt's status, reason and event line (the same in every store).
    /// `status` as a receipt may give it (`delivered`, `undelivered`, or `failed` for a fraud block),
    /// its reason and its event line.
    static func receipt(_ status: DeliveryStatus, errorCode: String?, now: Date) -> (DeliveryStatus, String?, String) {
        let code = errorCode.map { String($0.prefix(64)) }
        let status: DeliveryStatus = status == .failed ? .failed : status == .delivered ? .delivered : .undelivered
        let reason: String? =
            switch status {
            case .delivered: nil
            case .failed: "blocked by the provider's fraud defence (error \(code ?? "unknown"))"
            default: "provider error " + (code ?? "unknown")
            }
        let detail =
            status == .failed
            ? "receipt from the provider: fraud block (error \(code ?? "unknown")); not sent elsewhere"
            : "receipt from the provider" + (code.map { " (error \($0))" } ?? "")
        return (status, reason, MessageEvent(status: MessageStatus(status), at: now, detail: detail).storedLine)
    }

    /// The event line of a receipt that came after the message's final status: what it said, and
    /// that the status it found stays.
    static func lateReceipt(_ status: DeliveryStatus, final: DeliveryStatus, errorCode: String?, now: Date) -> String {
        let code = errorCode.map { " (error \($0.prefix(64)))" } ?? ""
        let detail = "late receipt from the provider\(code); the message stays \(final.rawValue)"
        return MessageEvent(status: MessageStatus(status), at: now, detail: detail).storedLine
    }

    static func message(_ row: [SQLValue]) -> MessageRecord? {
        guard row.count == 17, let id = row[0].string.flatMap(UUID.init(parsing:)), let project = row[1].string,
            let type = row[2].string.flatMap(JobType.init(rawValue:)), let destination = row[3].string,
            let status = row[6].string.flatMap(DeliveryStatus.init(rawValue:)), let created = row[14].int, let updated = row[15].int
        else { return nil }
        return MessageRecord(
            id: id, project: project, type: type, destination: destination, template: row[4].string, locale: row[5].string, status: status,
            attempts: Int(row[7].int ?? 0), provider: row[8].string, providerMessageID: row[9].string, producer: row[10].string,
            segments: row[11].int.map { Int($0) }, encoding: row[12].string, lastError: row[13].string, createdAt: Date(milliseconds: created),
            updatedAt: Date(milliseconds: updated), storedEvents: MessageEvent.parse(row[16].string))
    }
}
