import Foundation
import HeraldCore

extension SQLStore {
    /// One transaction: block check, limits, pumping count, session, ledger row. A trip commits the
    /// block and the refunds (and no session); a refusal writes nothing.
    public func admitSend(_ send: SendAdmission) async throws -> SendAdmission.Verdict {
        try await run { db in
            try db.transaction {
                let session = send.session
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
}
