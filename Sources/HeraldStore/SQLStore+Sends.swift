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
                if send.refuseSecondFactorHolders,
                    try Self.hasSecondFactor(db, projectID: session.projectID, phoneNumber: session.phoneNumber)
                {
                    return .secondFactorHolder
                }
                if let block = try Self.prefixBlock(db, projectID: session.projectID, prefix: send.prefix, now: send.now) {
                    return .blocked(block)
                }
                let entries = send.rateEntries
                let now = send.now.microsecondsSince1970
                if let refusal = try Self.decide(db, entries, now: now) { return .refused(index: refusal.index, decision: refusal.decision) }
                if let pumping = send.pumping,
                    try Self.observePrefix(db, projectID: session.projectID, prefix: send.prefix, settings: pumping, now: send.now)
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

    /// The same transaction as `admitSend`'s statements, inside `herald_batch_v7` (PostgresRoutines),
    /// sent with whatever else arrived meanwhile as one batch.
    func admitSendInPostgres(_ send: SendAdmission) async throws -> SendAdmission.Verdict {
        guard let batcher else { throw StoreError(.failed, "no batcher") }
        return try Self.admissionVerdict(try await batcher.submit(.admit(send)).row, of: send)
    }

    /// An admission's answer row from `herald_batch_v7` (its columns after `idx`) as a verdict.
    static func admissionVerdict(_ row: [SQLValue], of send: SendAdmission) throws -> SendAdmission.Verdict {
        guard row.count == 7 else { throw StoreError(.failed, "herald_batch_v7 answered a malformed row") }
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
        throw StoreError(.failed, "herald_batch_v7 answered an unknown verdict")
    }
}
