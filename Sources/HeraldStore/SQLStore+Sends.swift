import Foundation
import HeraldCore

extension SQLStore {
    /// One transaction: second-factor check (when asked), block check, limits, pumping count, session,
    /// ledger row. A trip commits the block and the refunds (and no session); a refusal writes nothing.
    public func admitSend(_ send: SendAdmission) async throws -> SendAdmission.Verdict {
        if dialect == .postgres { return try await admitSendInPostgres(send) }
        return try await run { db in
            try db.transaction {
                let session = send.session
                let found = try Self.admissionReads(db, send)
                if found.secondFactorHolder { return .secondFactorHolder }
                if let block = found.block { return .blocked(block) }
                let entries = send.rateEntries
                let now = send.now.microsecondsSince1970
                if let refusal = try Self.decide(db, entries, now: now) { return .refused(index: refusal.index, decision: refusal.decision) }
                if let pumping = send.pumping,
                    try Self.observePrefix(
                        db, projectID: session.projectID, prefix: send.prefix, settings: pumping, now: send.now, stored: found.velocity)
                {
                    for entry in entries { try Self.refund(db, key: entry.key, parameters: entry.parameters, now: now) }
                    return .tripped
                }
                try Self.insertSession(db, session)
                if let jobID = session.jobID {
                    try Self.recordPending(
                        db, jobID: jobID, projectID: session.projectID, type: .sms, destination: session.phoneNumber, now: send.now)
                }
                return .admitted
            }
        }
    }

    /// What a SQLite admission reads before it writes, in one statement: whether the number is the
    /// first factor of a user with a second one (asked for sign-ins only, `?5`), the prefix's active
    /// block and its velocity row. As three statements they paid the per-statement work (binding,
    /// stepping, resetting, the answer's rows) three times: about 0.7 % of herald-api's instructions per
    /// send. The velocity row is read before the limits are decided rather than after: the transaction
    /// holds SQLite's only write lock, so nothing changes it in between.
    static let admissionReadsStatement = """
        SELECT
          CASE WHEN ?5 THEN EXISTS (
            SELECT 1 FROM users u JOIN mfa_enrollments m ON m.project_id = u.project_id AND m.local_id = u.local_id
            WHERE u.project_id = ?1 AND u.phone_number = ?2
          ) ELSE 0 END,
          b.until_us, b.reason, b.created_us, v.window_start_us, v.count, v.baseline
        FROM (SELECT 1) AS one
        LEFT JOIN prefix_blocks AS b ON b.project_id = ?1 AND b.prefix = ?3 AND b.until_us > ?4
        LEFT JOIN prefix_velocity AS v ON v.project_id = ?1 AND v.prefix = ?3
        """

    static func admissionReads(
        _ db: any SQLConnection, _ send: SendAdmission
    ) throws -> (secondFactorHolder: Bool, block: PrefixBlock?, velocity: PrefixVelocity?) {
        let session = send.session
        guard
            let row = try db.query(
                admissionReadsStatement,
                [
                    .text(session.projectID), .text(session.phoneNumber), .text(send.prefix), .integer(send.now.microsecondsSince1970),
                    .integer(send.refuseSecondFactorHolders ? 1 : 0),
                ]
            ).first, row.count == 7
        else { throw StoreError(.failed, "the admission's reads answered no row") }
        let block = row[1].int == nil ? nil : Self.block([.text(session.projectID), .text(send.prefix), row[1], row[2], row[3]])
        var velocity: PrefixVelocity?
        if let start = row[4].int, let count = row[5].int {
            velocity = PrefixVelocity(windowStart: start, count: Int(count), baseline: row[6].double ?? 0)
        }
        return (row[0].int == 1, block, velocity)
    }

    /// The same transaction as `admitSend`'s statements, inside `herald_batch_v8` (PostgresRoutines),
    /// sent with whatever else arrived meanwhile as one batch.
    func admitSendInPostgres(_ send: SendAdmission) async throws -> SendAdmission.Verdict {
        guard let batcher else { throw StoreError(.failed, "no batcher") }
        return try Self.admissionVerdict(try await batcher.submit(.admit(send)).row, of: send)
    }

    /// An admission's answer row from `herald_batch_v8` (its columns after `idx`) as a verdict.
    static func admissionVerdict(_ row: [SQLValue], of send: SendAdmission) throws -> SendAdmission.Verdict {
        guard row.count == 7 else { throw StoreError(.failed, "herald_batch_v8 answered a malformed row") }
        switch row[0].string {
        case "admitted": return .admitted
        case "tripped": return .tripped
        case "secondFactor": return .secondFactorHolder
        case "refused":
            guard let index = row[1].int, let tat = row[2].int, let retryAfter = row[3].int else { break }
            return .refused(index: Int(index), decision: GCRA.Decision(allowed: false, tat: tat, retryAfter: retryAfter))
        case "blocked":
            guard let until = row[4].int, let created = row[5].int, let reason = row[6].string else { break }
            return .blocked(
                PrefixBlock(
                    projectID: send.session.projectID, prefix: send.prefix, until: Date(microseconds: until), reason: reason,
                    createdAt: Date(microseconds: created)))
        default: break
        }
        throw StoreError(.failed, "herald_batch_v8 answered an unknown verdict")
    }
}
