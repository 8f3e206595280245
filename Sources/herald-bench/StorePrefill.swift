import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging

/// What a store in service holds beside a fresh one (`--prefill N`): `N` sessions of the last day,
/// `N` ledger rows of the last 30 days, and the per-number limit keys of `N` numbers still live. The
/// throughput runs start on an empty store, whose tables fit in SQLite's page cache; in service the
/// sessions' and ledger's random indexes and the limit keys do not, and each send reads and writes
/// pages all over them.
struct StorePrefill {
    let rows: Int

    /// Writes the rows into `stack`'s store (its herald-api running beside, as another process would),
    /// 64 lanes at a time so that SQLite's writer commits them in batches. Numbers are not those the
    /// load sends to (`Wrk.sendScript` uses +1555 2,000,000 onwards), so every send still finds its
    /// own keys new.
    func fill(_ stack: BenchStack) async throws {
        guard rows > 0 else { return }
        let url = stack.settings.storeURL ?? "sqlite:\(stack.settings.stateDir)/herald.sqlite"
        let store = try await SQLStore.open(
            .init(url: url, location: try StoreLocation(parsing: url), poolSize: 16), migrate: false, logger: Logger(label: "prefill"))
        let started = ContinuousClock.now
        let now = Date()
        let project = TestConfiguration.projectID
        let policies = ["5/1h", "10/1d"].compactMap(RatePolicy.parse)
        do {
            try await Bench.inLanes(rows) { index in
                let phone = "+1444\(String(format: "%07d", index))"
                let sessionAt = now.addingTimeInterval(-86_400 * Double(rows - index) / Double(rows))
                let jobID = UUID()
                try await store.insertSession(
                    Bench.reportSession(index: index, at: sessionAt, jobID: jobID, projectID: project, phoneNumber: phone))
                try await store.recordPending(
                    jobID: jobID, projectID: project, type: .sms, destination: phone, producer: nil,
                    now: now.addingTimeInterval(-30 * 86_400 * Double(rows - index) / Double(rows)))
                let keys = policies.map { policy in
                    (key: LimitCheck(kind: .number, scope: project, subject: phone, policy: policy).key, parameters: GCRA.Parameters(policy))
                }
                _ = try await store.rateDecisions(keys, now: now.microsecondsSince1970)
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        print(
            String(
                format: "prefill: %d sessions of the last day, %d ledger rows of the last 30 days, %d live limit keys, in %.0f s", rows, rows,
                rows * policies.count, (ContinuousClock.now - started).seconds))
    }
}
