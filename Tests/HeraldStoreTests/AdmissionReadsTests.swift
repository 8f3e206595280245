import Foundation
import HeraldCore
import Testing

@testable import HeraldStore

/// A SQLite admission's reads before its writes, one statement (`SQLStore.admissionReadsStatement`).
@Suite("SQLite admission's reads")
struct AdmissionReadsTests {
    @Test("the admission's reads look up the number's user, the prefix's block and its velocity by index, scanning no table")
    func readsByIndex() async throws {
        try await StoreFixture.with(.sqlite) { _, opened in
            let store = try #require(opened as? SQLStore)
            let plan = try await store.run { db in
                try db.query(
                    "EXPLAIN QUERY PLAN " + SQLStore.admissionReadsStatement,
                    [.text("p"), .text("+15555550100"), .text("+1555"), .integer(0), .integer(1)]
                ).compactMap { $0.last?.string }
            }
            for lookup in [
                "SEARCH b USING PRIMARY KEY (project_id=? AND prefix=?)", "SEARCH v USING PRIMARY KEY (project_id=? AND prefix=?)",
                "SEARCH u USING INDEX users_phone (project_id=? AND phone_number=?)", "SEARCH m USING PRIMARY KEY (project_id=? AND local_id=?)",
            ] {
                #expect(plan.contains { $0.hasPrefix(lookup) }, "\(plan)")
            }
            // The one constant row the lookups join to; no table is read whole.
            #expect(plan.filter { $0.hasPrefix("SCAN ") }.allSatisfy { $0 == "SCAN one" || $0 == "SCAN CONSTANT ROW" }, "\(plan)")
        }
    }

    @Test("the reads answer a live block but not a lapsed one, the velocity row as stored, and the second factor only when asked")
    func answers() async throws {
        try await StoreFixture.with(.sqlite) { _, opened in
            let store = try #require(opened as? SQLStore)
            let now = Date()
            let user = UserAccount(
                localID: String(repeating: "m", count: 28), projectID: "p", phoneNumber: "+15555550100", createdAt: now, lastLoginAt: now)
            try await store.insertUser(user)
            try await store.addMFAEnrollment(
                MFAEnrollment(enrollmentID: "e1", phoneNumber: "+15555559999", displayName: nil, enrolledAt: now), projectID: "p",
                localID: user.localID)
            let micros = now.microsecondsSince1970
            try await store.run { db in
                try db.query(
                    "INSERT INTO prefix_blocks (project_id, prefix, until_us, reason, created_us) VALUES ('p', '+1555', ?, 'pumping', ?), ('p', '+4479', ?, 'old', ?)",
                    [.integer(micros + 60_000_000), .integer(micros - 1_000), .integer(micros), .integer(micros - 1_000)])
                try db.query("INSERT INTO prefix_velocity (project_id, prefix, window_start_us, count, baseline) VALUES ('p', '+4479', 17, 3, 1.5)")
            }
            func reads(_ phone: String, prefix: String, asked: Bool) async throws -> (Bool, PrefixBlock?, PrefixVelocity?) {
                let session = VerificationSession(
                    id: "s", projectID: "p", phoneNumber: phone, region: "US", codeHash: Data([1]), createdAt: now, expiresAt: now, maxAttempts: 5)
                var send = SendAdmission(session: session, prefix: prefix, limits: [], pumping: nil, now: now)
                send.refuseSecondFactorHolders = asked
                let asSent = send
                return try await store.run { db in try SQLStore.admissionReads(db, asSent) }
            }
            let live = try await reads("+15555550100", prefix: "+1555", asked: true)
            #expect(live.0)
            #expect(live.1?.reason == "pumping" && live.1?.prefix == "+1555" && live.1?.projectID == "p")
            #expect(live.2 == nil)
            // Lapsed at `now` exactly (a block holds while its end is later than now).
            let lapsed = try await reads("+15555550100", prefix: "+4479", asked: false)
            #expect(lapsed.0 == false)
            #expect(lapsed.1 == nil)
            #expect(lapsed.2 == PrefixVelocity(windowStart: 17, count: 3, baseline: 1.5))
            #expect(try await reads("+15555550101", prefix: "+1", asked: true).0 == false)
        }
    }
}
