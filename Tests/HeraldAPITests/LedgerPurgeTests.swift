import Foundation
import HeraldCore
import HeraldStore
import Logging
import Testing

@testable import HeraldAPI

/// herald-api's housekeeping deletes ledger rows unchanged for `ledger.retention`, in chunks.
@Suite("Ledger purge")
struct LedgerPurgeTests {
    @Test("rows past the retention go, in chunks of 1,000 until none is left; younger ones stay")
    func purge() async throws {
        let store = MemoryStore()
        let now = Date()
        let old = now.addingTimeInterval(-31 * 86_400)
        for _ in 0..<2_500 {
            try await store.recordPending(jobID: UUID(), projectID: "p", type: .sms, destination: "+15555550100", now: old)
        }
        let recent = UUID()
        try await store.recordPending(
            jobID: recent, projectID: "p", type: .sms, destination: "+15555550100", now: now.addingTimeInterval(-29 * 86_400))
        let maintenance = StoreMaintenance(store: store, retention: .seconds(30 * 86_400), logger: Logger(label: "test"))
        try await maintenance.purgeLedger(now: now)
        let left = try await store.messages(MessageQuery(pageSize: 500)).messages
        #expect(left.map(\.id) == [recent])
    }
}
