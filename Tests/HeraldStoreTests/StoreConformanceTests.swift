import Foundation
import HeraldCore
import HeraldStore
import Testing

/// The behaviour every store must have. Runs against a real SQLite file; two `SQLiteStore`s on one
/// file stand for two processes.
@Suite("Store conformance: SQLite")
struct StoreConformanceTests {
    let directory: String
    let path: String

    init() throws {
        directory = NSTemporaryDirectory() + "herald-store-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/herald.sqlite"
    }

    func session(id: String = UUID().uuidString, max: Int = 3, expiresIn: TimeInterval = 300) -> VerificationSession {
        let now = Date()
        return VerificationSession(
            id: id, projectID: "p", phoneNumber: "+15555550100", codeHash: Data([1, 2, 3]), createdAt: now,
            expiresAt: now.addingTimeInterval(expiresIn), maxAttempts: max, jobID: UUID())
    }

    @Test("the store's directory is created 0700 and its files (database, -wal, -shm) 0600")
    func filePermissions() async throws {
        let nested = directory + "/state"
        let store = try SQLiteStore(path: nested + "/herald.sqlite")
        try await store.insertSession(session())
        func mode(_ path: String) throws -> Int {
            try #require((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue)
        }
        #expect(try mode(nested) == 0o700)
        for suffix in ["", "-wal", "-shm"] {
            #expect(try mode(nested + "/herald.sqlite" + suffix) == 0o600, "herald.sqlite\(suffix)")
        }
    }

    @Test("a session spends exactly maxAttempts reservations, then reports none left")
    func reservations() async throws {
        let store = try SQLiteStore(path: path)
        let stored = session(max: 3)
        try await store.insertSession(stored)
        for expected in 1...3 {
            let reservation = try #require(try await store.reserveCheckAttempt(sessionID: stored.id))
            #expect(reservation.reserved)
            #expect(reservation.session.attempts == expected)
            #expect(reservation.session.jobID == stored.jobID)
            #expect(reservation.session.codeHash == stored.codeHash)
        }
        let exhausted = try #require(try await store.reserveCheckAttempt(sessionID: stored.id))
        #expect(exhausted.reserved == false)
        #expect(exhausted.session.attempts == 3)
        #expect(try await store.reserveCheckAttempt(sessionID: "unknown") == nil)
    }

    @Test("concurrent checks from two processes never spend more than the budget")
    func concurrentReservations() async throws {
        let first = try SQLiteStore(path: path)
        let second = try SQLiteStore(path: path)
        let stored = session(max: 5)
        try await first.insertSession(stored)
        let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<60 {
                let store = index.isMultiple(of: 2) ? first : second
                group.addTask { try await store.reserveCheckAttempt(sessionID: stored.id)?.reserved ?? false }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(granted == 5)
    }

    @Test("a session is consumed once")
    func consumeOnce() async throws {
        let store = try SQLiteStore(path: path)
        let stored = session()
        try await store.insertSession(stored)
        #expect(try await store.consumeSession(id: stored.id, at: Date()))
        #expect(try await store.consumeSession(id: stored.id, at: Date()) == false)
        let after = try #require(try await store.reserveCheckAttempt(sessionID: stored.id))
        #expect(after.reserved == false)
        #expect(after.session.consumedAt != nil)
    }

    @Test("expired sessions are purged")
    func purge() async throws {
        let store = try SQLiteStore(path: path)
        let old = session(expiresIn: -10)
        let fresh = session()
        try await store.insertSession(old)
        try await store.insertSession(fresh)
        #expect(try await store.purgeSessions(expiredBefore: Date()) == 1)
        #expect(try await store.reserveCheckAttempt(sessionID: old.id) == nil)
        #expect(try await store.reserveCheckAttempt(sessionID: fresh.id) != nil)
    }

    @Test("the same phone number finds the same user, created once even under a race")
    func users() async throws {
        let first = try SQLiteStore(path: path)
        let second = try SQLiteStore(path: path)
        let results = try await withThrowingTaskGroup(of: (UserAccount, Bool).self) { group in
            for index in 0..<20 {
                let store = index.isMultiple(of: 2) ? first : second
                group.addTask { try await store.findOrCreateUser(projectID: "p", phoneNumber: "+15555550100", now: Date()) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results.map(\.0.localID)).count == 1)
        #expect(results.filter(\.1).count == 1)
        let localID = results[0].0.localID
        #expect(localID.count == 28)
        #expect(localID.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        let other = try await first.findOrCreateUser(projectID: "other", phoneNumber: "+15555550100", now: Date())
        #expect(other.created)
        #expect(other.user.localID != localID)
        #expect(try await first.user(projectID: "p", localID: localID)?.phoneNumber == "+15555550100")
        #expect(try await first.user(projectID: "other", localID: localID) == nil)
    }

    @Test("refresh tokens are found by hash")
    func refreshTokens() async throws {
        let store = try SQLiteStore(path: path)
        let record = RefreshTokenRecord(
            tokenHash: "h1", projectID: "p", localID: "u", provider: "phone", createdAt: Date(timeIntervalSince1970: 1000))
        try await store.insertRefreshToken(record)
        #expect(try await store.refreshToken(hash: "h1") == record)
        #expect(try await store.refreshToken(hash: "h2") == nil)
    }

    @Test("the delivery ledger lets a job be sent once, retried after a recorded failure, never after an unknown outcome")
    func ledger() async throws {
        let store = try SQLiteStore(path: path)
        let job = UUID()
        try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+1", now: Date())
        #expect(try await store.deliveryStatus(jobID: job)?.status == .pending)
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w1", now: Date(), reclaimInDoubt: false)
                == .claimed(attempt: 1))
        // Redelivered while w1 never recorded an outcome: in doubt, not sent again.
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w2", now: Date(), reclaimInDoubt: false)
                == .inDoubt(owner: "w1"))
        try await store.recordDelivery(jobID: job, status: .retrying, reason: "503", now: Date())
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w2", now: Date(), reclaimInDoubt: false)
                == .claimed(attempt: 2))
        try await store.recordDelivery(jobID: job, status: .sent, reason: nil, now: Date())
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w3", now: Date(), reclaimInDoubt: false)
                == .finished(.sent))
        let status = try #require(try await store.deliveryStatus(jobID: job))
        #expect(status.status == .sent)
        #expect(status.attempts == 2)
    }

    @Test("a job without a ledger row, or re-addressed, is never claimed; in-doubt jobs can be reclaimed on request")
    func unknownMismatchAndReclaim() async throws {
        let store = try SQLiteStore(path: path)
        let job = UUID()
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w1", now: Date(), reclaimInDoubt: false)
                == .unknown)
        #expect(try await store.deliveryStatus(jobID: job) == nil)
        try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+1", now: Date())
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+2", owner: "w1", now: Date(), reclaimInDoubt: false)
                == .mismatch(field: "to"))
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "q", type: .sms, destination: "+1", owner: "w1", now: Date(), reclaimInDoubt: false)
                == .mismatch(field: "project"))
        #expect(
            try await store.claimDelivery(
                jobID: job, projectID: "p", type: .email, destination: "+1", owner: "w1", now: Date(), reclaimInDoubt: false)
                == .mismatch(field: "type"))
        #expect(try await store.deliveryStatus(jobID: job)?.status == .pending)
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w1", now: Date(), reclaimInDoubt: false)
                == .claimed(attempt: 1))
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w2", now: Date(), reclaimInDoubt: true)
                == .claimed(attempt: 2))
        try await store.recordDelivery(jobID: job, status: .abandoned, reason: "publish failed", now: Date())
        #expect(
            try await store.claimDelivery(jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w3", now: Date(), reclaimInDoubt: true)
                == .finished(.abandoned))
    }

    @Test("migrations run once and a reopened file keeps its data")
    func reopen() async throws {
        let stored = session()
        do {
            let store = try SQLiteStore(path: path)
            try await store.insertSession(stored)
        }
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.reserveCheckAttempt(sessionID: stored.id)?.reserved == true)
    }
}
