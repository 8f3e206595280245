import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldAPI

/// herald-api's housekeeping deletes ledger rows unchanged for `ledger.retention`, and expired sessions,
/// email codes, receipts, credentials and limit keys, in chunks, paced.
@Suite("Housekeeping purges")
struct HousekeepingPurgeTests {
    @Test("rows past the retention go, in chunks until none is left; younger ones stay")
    func purge() async throws {
        let store = MemoryStore()
        let now = Date()
        let old = now.addingTimeInterval(-31 * 86_400)
        for _ in 0..<750 {
            try await store.recordPending(jobID: UUID(), projectID: "p", type: .sms, destination: "+15555550100", now: old)
        }
        let recent = UUID()
        try await store.recordPending(
            jobID: recent, projectID: "p", type: .sms, destination: "+15555550100", now: now.addingTimeInterval(-29 * 86_400))
        let maintenance = housekeeping(store)
        try await maintenance.purgeLedger(now: now)
        let left = try await store.messages(MessageQuery(pageSize: 500)).messages
        #expect(left.map(\.id) == [recent])
    }

    /// Housekeeping over `store`, with the default 30-day ledger retention.
    func housekeeping(_ store: any HeraldStoreProtocol) -> StoreMaintenance {
        StoreMaintenance(store: store, retention: .seconds(30 * 86_400), logger: Logger(label: "test"), conversionSettle: .seconds(360))
    }

    /// Rows past the retention in a fresh SQLite store, written concurrently so the writer batches them.
    func sqliteLedger(old count: Int, now: Date) async throws -> (SQLStore, String) {
        let directory = NSTemporaryDirectory() + "herald-purge-\(UUID().uuidString)"
        let store = try await onOwnThread { try SQLStore(sqlitePath: directory + "/herald.sqlite") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    for index in stride(from: lane, to: count, by: 16) {
                        try await store.recordPending(
                            jobID: UUID(), projectID: "p", type: .sms, destination: "+1555\(6_000_000 + index)",
                            now: now.addingTimeInterval(-31 * 86_400))
                    }
                }
            }
            try await group.waitForAll()
        }
        return (store, directory)
    }

    @Test("a pass is not capped at a number of statements: a ledger fed faster than one pass a minute deleted is caught up")
    func manyChunksInOnePass() async throws {
        let now = Date()
        // 61 chunks of 10 and a part: a pass is bounded by time, not by a number of statements.
        let (store, directory) = try await sqliteLedger(old: 615, now: now)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var maintenance = housekeeping(store)
        maintenance.pacing.ledger = PurgePacing(chunk: 10, budget: .seconds(600))
        try await maintenance.purgeLedger(now: now)
        #expect(try await store.messages(MessageQuery(pageSize: 10)).messages.isEmpty)
        await store.close()
    }

    @Test("a pass whose budget is spent stops with rows left; the next pass goes on")
    func budgetSpent() async throws {
        let now = Date()
        let (store, directory) = try await sqliteLedger(old: 30, now: now)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var maintenance = housekeeping(store)
        maintenance.pacing.ledger = PurgePacing(chunk: 10, budget: .zero)
        try await maintenance.purgeLedger(now: now)
        #expect(try await store.messages(MessageQuery(pageSize: 50)).messages.count == 20)
        try await maintenance.purgeLedger(now: now)
        #expect(try await store.messages(MessageQuery(pageSize: 50)).messages.count == 10)
        await store.close()
    }

    @Test("a pass deletes every kind of row past its time, in chunks, and nothing younger")
    func everyPurge() async throws {
        let store = MemoryStore()
        let now = Date()
        let dayAndMore = now.addingTimeInterval(-86_400 - 60)
        let young = now.addingTimeInterval(-3_600)
        for (index, at) in ([dayAndMore, dayAndMore, dayAndMore, young]).enumerated() {
            try await store.insertSession(
                VerificationSession(
                    id: "s\(index)", projectID: "p", phoneNumber: "+15555550100", codeHash: Data([1]), createdAt: at.addingTimeInterval(-300),
                    expiresAt: at, maxAttempts: 3, jobID: nil))
            try await store.insertReceipt(
                AppReceipt(receiptHash: "r\(index)", projectID: "p", bundleID: "b", secretHash: "s", deviceTokenHash: "d", createdAt: at))
            try await store.insertOobCode(
                OobRecord(
                    codeHash: "c\(index)", projectID: "p", requestType: "EMAIL_SIGNIN", email: "a@example.com",
                    createdAt: at.addingTimeInterval(-600),
                    expiresAt: at))
            _ = try await store.spendCredential(hash: "h\(index)", projectID: "p", expiresAt: at == young ? now.addingTimeInterval(60) : at)
        }
        var maintenance = housekeeping(store)
        maintenance.pacing.sessions = PurgePacing(chunk: 2, budget: .seconds(600))
        maintenance.pacing.smallRows = PurgePacing(chunk: 2, budget: .seconds(600))
        var sweep = RateKeySweep.housekeeping
        try await maintenance.purges(now: now, rateKeys: &sweep)
        for index in 0..<3 {
            #expect(try await store.reserveCheckAttempt(sessionID: "s\(index)") == nil)
            #expect(try await store.receipt(hash: "r\(index)") == nil)
            #expect(try await store.oobCode(hash: "c\(index)") == nil)
            // Forgotten: spending it again is allowed (its expiry check refuses the token itself).
            #expect(try await store.spendCredential(hash: "h\(index)", projectID: "p", expiresAt: now.addingTimeInterval(60)))
        }
        #expect(try await store.reserveCheckAttempt(sessionID: "s3") != nil)
        #expect(try await store.receipt(hash: "r3") != nil)
        #expect(try await store.oobCode(hash: "c3") != nil)
        #expect(try await store.spendCredential(hash: "h3", projectID: "p", expiresAt: now.addingTimeInterval(60)) == false)
    }

    /// Writes one key per name under a one-a-minute policy at `at`: its TAT is a second later.
    func passingKeys(_ names: [String], at: Date, in store: MemoryStore) async throws {
        let policy = GCRA.Parameters(RatePolicy.parse("60/1m")!)
        for name in names { _ = try await store.rateDecision(key: "number:p:\(name)|x", parameters: policy, now: at.microsecondsSince1970) }
    }

    func keyCount(_ name: String, in store: MemoryStore) async throws -> Int {
        try await store.rateStates(kind: "number", subject: name, project: nil).count
    }

    @Test("limit keys are swept every ten minutes, not every pass: a key passed since waits for the next sweep")
    func rateKeysEveryTenMinutes() async throws {
        let store = MemoryStore()
        let now = Date()
        try await passingKeys(["old"], at: now.addingTimeInterval(-120), in: store)
        _ = try await store.rateDecision(
            key: "number:p:live|x", parameters: GCRA.Parameters(RatePolicy.parse("1/1d")!), now: now.microsecondsSince1970)
        let maintenance = housekeeping(store)
        var sweep = RateKeySweep.housekeeping
        try await maintenance.purges(now: now, rateKeys: &sweep)
        #expect(try await keyCount("old", in: store) == 0)
        try await passingKeys(["new"], at: now, in: store)
        try await maintenance.purges(now: now.addingTimeInterval(60), rateKeys: &sweep)
        try await maintenance.purges(now: now.addingTimeInterval(540), rateKeys: &sweep)
        #expect(try await keyCount("new", in: store) == 1)
        try await maintenance.purges(now: now.addingTimeInterval(600), rateKeys: &sweep)
        #expect(try await keyCount("new", in: store) == 0)
        #expect(try await keyCount("live", in: store) == 1)
    }

    @Test("a sweep cut off by its budget goes on where it stopped in the next pass, then waits for its period")
    func rateKeySweepGoesOn() async throws {
        let store = MemoryStore()
        let now = Date()
        let names = ["a", "b", "c", "d", "e"]
        try await passingKeys(names, at: now.addingTimeInterval(-120), in: store)
        var maintenance = housekeeping(store)
        // One statement of two keys a pass.
        maintenance.pacing.rateKeys = PurgePacing(chunk: 2, budget: .zero)
        var sweep = RateKeySweep.housekeeping
        var left: [Int] = []
        for minute in 0..<4 {
            if minute == 3 { try await passingKeys(["f"], at: now, in: store) }
            try await maintenance.purgeRateKeys(now: now.addingTimeInterval(60 * Double(minute)), sweep: &sweep)
            var count = 0
            for name in names + ["f"] { count += try await keyCount(name, in: store) }
            left.append(count)
        }
        // 5, then 3, 1 and 0 left; the fourth pass, within ten minutes of the sweep's start, walks nothing.
        #expect(left == [3, 1, 0, 1])
        #expect(sweep.cursor == nil)
    }

    /// One expired session, a day and a minute past its expiry at `now`.
    func expiredSession(_ id: String, now: Date, in store: MemoryStore) async throws {
        let expired = now.addingTimeInterval(-86_400 - 60)
        try await store.insertSession(
            VerificationSession(
                id: id, projectID: "p", phoneNumber: "+15555550100", codeHash: Data([1]), createdAt: expired.addingTimeInterval(-300),
                expiresAt: expired, maxAttempts: 3, jobID: nil))
    }

    func exists(_ id: String, in store: MemoryStore) async throws -> Bool {
        try await store.reserveCheckAttempt(sessionID: id) != nil
    }

    @Test("with two herald-api on one store, only the holder of the turn purges; the other takes over when it stops or stops renewing")
    func oneProcessPurges() async throws {
        let store = MemoryStore()
        let now = Date()
        var first = housekeeping(store)
        first.holder = "first"
        var second = housekeeping(store)
        second.holder = "second"
        var (firstTurn, secondTurn) = (HousekeepingTurn(), HousekeepingTurn())
        var (firstSweep, secondSweep) = (RateKeySweep.housekeeping, RateKeySweep.housekeeping)

        try await expiredSession("s1", now: now, in: store)
        try await first.purgesInTurn(now: now, turn: &firstTurn, rateKeys: &firstSweep)
        #expect(firstTurn.holding && firstSweep.began == now)
        #expect(try await exists("s1", in: store) == false)

        // The second's passes purge nothing while the first renews its turn.
        try await expiredSession("s2", now: now, in: store)
        try await second.purgesInTurn(now: now.addingTimeInterval(30), turn: &secondTurn, rateKeys: &secondSweep)
        #expect(secondTurn.holding == false && secondSweep.began == nil)
        #expect(try await exists("s2", in: store))
        try await first.purgesInTurn(now: now.addingTimeInterval(60), turn: &firstTurn, rateKeys: &firstSweep)
        #expect(try await exists("s2", in: store) == false)

        // The first stops renewing (hung, or cut off from the store): three minutes after its last
        // renewal the second's pass takes the turn, starts its own sweep and purges; the first, back,
        // finds it lost and purges nothing.
        try await expiredSession("s3", now: now, in: store)
        try await second.purgesInTurn(now: now.addingTimeInterval(239), turn: &secondTurn, rateKeys: &secondSweep)
        #expect(secondTurn.holding == false)
        #expect(try await exists("s3", in: store))
        try await second.purgesInTurn(now: now.addingTimeInterval(240), turn: &secondTurn, rateKeys: &secondSweep)
        #expect(secondTurn.holding && secondSweep.began == now.addingTimeInterval(240))
        #expect(try await exists("s3", in: store) == false)
        try await expiredSession("s4", now: now, in: store)
        try await first.purgesInTurn(now: now.addingTimeInterval(250), turn: &firstTurn, rateKeys: &firstSweep)
        #expect(firstTurn.holding == false)
        #expect(try await exists("s4", in: store))

        // Taken again after the second gave it up: a fresh sweep, not the one left from before.
        try await store.endTurn(HousekeepingTurn.name, holder: "second")
        try await first.purgesInTurn(now: now.addingTimeInterval(260), turn: &firstTurn, rateKeys: &firstSweep)
        #expect(firstTurn.holding && firstSweep.began == now.addingTimeInterval(260))
        #expect(try await exists("s4", in: store) == false)
    }

    @Test("a herald-api that stops gives its turn up, so the next process need not wait for the term", arguments: [false, true])
    func stoppingGivesTheTurnUp(onSQLite: Bool) async throws {
        let directory = NSTemporaryDirectory() + "herald-turn-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store: any HeraldStoreProtocol =
            onSQLite ? try await onOwnThread { try SQLStore(sqlitePath: directory + "/herald.sqlite") } : MemoryStore()
        var maintenance = housekeeping(store)
        maintenance.holder = "stopping"
        let running = Task { try await maintenance.run() }
        let took = await eventually(timeout: .seconds(10)) { (try? await store.turnHolder(HousekeepingTurn.name))?.holder == "stopping" }
        #expect(took)
        running.cancel()
        try await running.value
        #expect(try await store.turnHolder(HousekeepingTurn.name) == nil)
        if let store = store as? SQLStore { await store.close() }
    }
}
