import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Moving from one machine to several: every table of a SQLite store into PostgreSQL.
@Suite("Store copy: SQLite into PostgreSQL")
struct StoreCopyTests {
    @Test("every table arrives, the copy answers through the PostgreSQL store's ports, and a second run adds nothing")
    func sqliteIntoPostgres() async throws {
        let source = try StoreFixture(.sqlite)
        let target = try StoreFixture(.postgres)
        let sqlite = try await source.openSQL()
        let postgres = try await target.openSQL()
        do {
            try await check(sqlite, postgres, target: target)
        } catch {
            await source.tearDown(sqlite)
            await target.tearDown(postgres)
            throw error
        }
        await source.tearDown(sqlite)
        await target.tearDown(postgres)
    }

    func check(_ sqlite: SQLStore, _ postgres: SQLStore, target: StoreFixture) async throws {
        let now = Date(timeIntervalSince1970: Double(Int(Date().timeIntervalSince1970)))
        // 1,234 users: more than two batches.
        for index in 0..<1234 {
            _ = try await sqlite.findOrCreateUser(projectID: "p", phoneNumber: "+1555555\(String(format: "%04d", index))", proven: true, now: now)
        }
        let alice = UserAccount(
            localID: "alice".padding(toLength: 28, withPad: "0", startingAt: 0), projectID: "p", email: "alice@example.com", emailVerified: true,
            passwordHash: "hash", displayName: "Alice", emailLinkSignin: true, createdAt: now, lastLoginAt: now, validSince: now,
            identities: [FederatedIdentity(providerID: "apple.com", federatedID: "001.apple", email: "alice@example.com", linkedAt: now)])
        try await sqlite.insertUser(alice)
        _ = try await sqlite.spendCredential(hash: "idp", projectID: "p", expiresAt: now.addingTimeInterval(600))
        let enrollment = MFAEnrollment(enrollmentID: "e1", phoneNumber: "+15555559999", displayName: "work", enrolledAt: now)
        try await sqlite.addMFAEnrollment(enrollment, projectID: "p", localID: alice.localID)
        try await sqlite.insertRefreshToken(.init(tokenHash: "rt", projectID: "p", localID: alice.localID, provider: "password", createdAt: now))
        let session = VerificationSession(
            id: "s1", projectID: "p", phoneNumber: "+15555550001", region: "US", codeHash: Data([9, 8, 7]), createdAt: now,
            expiresAt: now.addingTimeInterval(300), maxAttempts: 5, jobID: UUID(), sessionInfoSealed: "sealed", purpose: .signIn)
        try await sqlite.insertSession(session)
        let oob = OobRecord(
            codeHash: "oob", projectID: "p", requestType: "EMAIL_SIGNIN", email: "alice@example.com", createdAt: now,
            expiresAt: now.addingTimeInterval(3600), jobID: UUID())
        try await sqlite.insertOobCode(oob)
        let job = UUID()
        try await sqlite.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+15555550001", now: now)
        let policy = GCRA.Parameters(RatePolicy.parse("3/1h")!)
        _ = try await sqlite.rateDecision(key: "number:p:+15555550001|3/1h", parameters: policy, now: now.microsecondsSince1970)
        let velocity = PrefixVelocity.Settings(enabled: true, window: .seconds(600), multiple: 10, minimumSends: 1, blockFor: .seconds(3600))
        _ = try await sqlite.observePrefix(projectID: "p", prefix: "+4479", settings: velocity, now: now)
        _ = try await sqlite.observePrefix(projectID: "p", prefix: "+4479", settings: velocity, now: now)
        let receipt = AppReceipt(receiptHash: "r", projectID: "p", bundleID: "com.example", secretHash: "s", deviceTokenHash: "d", createdAt: now)
        try await sqlite.insertReceipt(receipt)
        try await sqlite.markDeviceTokenInvalid(hash: "d", reason: "Unregistered", since: now)

        let progress = ProgressLog()
        let first = try await sqlite.copy(to: postgres, batchSize: 500) { table, copied, total in progress.add(table, copied, total) }
        #expect(first.first { $0.table == "users" } == .init(table: "users", rows: 1235, inserted: 1235))
        #expect(first.allSatisfy { $0.rows == $0.inserted && $0.rows > 0 }, "\(first)")
        #expect(progress.lines.filter { $0.table == "users" }.map(\.copied) == [500, 1000, 1235])

        #expect(
            try await postgres.user(projectID: "p", email: "alice@example.com")
                == UserAccount(
                    localID: alice.localID, projectID: "p", email: "alice@example.com", emailVerified: true, passwordHash: "hash",
                    displayName: "Alice",
                    emailLinkSignin: true, createdAt: now, lastLoginAt: now, validSince: now, mfaEnrollments: [enrollment],
                    identities: alice.identities))
        #expect(try await postgres.user(projectID: "p", providerID: "apple.com", federatedID: "001.apple")?.localID == alice.localID)
        #expect(try await postgres.spendCredential(hash: "idp", projectID: "p", expiresAt: now) == false, "the spent credential came along")
        #expect(try await postgres.user(projectID: "p", phoneNumber: "+15555551233") != nil)
        #expect(try await postgres.refreshToken(hash: "rt")?.localID == alice.localID)
        let reserved = try #require(try await postgres.reserveCheckAttempt(sessionID: "s1"))
        #expect(reserved.reserved && reserved.session.codeHash == session.codeHash && reserved.session.region == "US")
        #expect(try await postgres.oobCode(hash: "oob") == oob)
        #expect(
            try await postgres.claimDelivery(
                jobID: job, projectID: "p", type: .sms, destination: "+15555550001", owner: "w", now: now, reclaimInDoubt: false)
                == .claimed(attempt: 1))
        #expect(try await postgres.rateStates(kind: "number", subject: "+15555550001", project: "p").count == 1)
        #expect(try await postgres.prefixBlock(projectID: "p", prefix: "+4479", now: now) != nil)
        #expect(try await postgres.receipt(hash: "r") == receipt)
        #expect(try await postgres.invalidDeviceToken(hash: "d") == "Unregistered")

        // Again, as an operator would right before switching over: nothing is duplicated or overwritten.
        _ = try await sqlite.findOrCreateUser(projectID: "p", phoneNumber: "+15555558888", proven: true, now: now)
        let second = try await sqlite.copy(to: postgres, batchSize: 500)
        #expect(second.first { $0.table == "users" } == .init(table: "users", rows: 1236, inserted: 1))
        #expect(second.filter { $0.table != "users" }.allSatisfy { $0.inserted == 0 }, "\(second)")
        #expect(try await postgres.deliveryStatus(jobID: job)?.status == .sending, "the target's newer state is kept")

        // The same through herald-admin.
        let directory = NSTemporaryDirectory() + "herald-copy-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqliteURL = "sqlite:" + directory + "/empty.sqlite"
        let admin = try HeraldProcess(
            "herald-admin", arguments: ["store", "copy", "--from", target.location, "--to", sqliteURL], logDirectory: directory)
        #expect(await admin.waitForExit(timeout: .seconds(60)) == 0, "\(admin.output)")
        #expect(admin.output.contains("users\t1236 rows\t1236 new"), "\(admin.output)")
        #expect(admin.output.contains("copy: users 1236/1236"))
        let password = try #require(try StoreLocation(parsing: target.location).postgresPassword)
        #expect(admin.output.contains(password) == false, "the password is printed")

        // herald-admin store status on the PostgreSQL store: backend, schema version, rows per table.
        var settings = TestConfiguration()
        settings.stateDir = directory + "/state"
        settings.storeURL = target.location
        let configPath = try settings.write()
        let status = try HeraldProcess(
            "herald-admin", arguments: ["store", "status", "--exact-rows", "--config", configPath], logDirectory: directory)
        #expect(await status.waitForExit(timeout: .seconds(30)) == 0, "\(status.output)")
        let lines = status.output.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("backend\tpostgres\tpostgres://") == true, "\(status.output)")
        #expect(lines.contains("durability\tsynchronous_commit=on"), "\(status.output)")
        #expect(lines.contains("schema\t\(Migrations.latestVersion)\tof \(Migrations.latestVersion) known to this build"))
        #expect(lines.contains("rows\tusers\t1236"))
        #expect(lines.contains("rows\tdeliveries\t1"))
        #expect(status.output.contains(password) == false)
        // Without --exact-rows, PostgreSQL's own estimates, marked as such.
        let estimated = try HeraldProcess("herald-admin", arguments: ["store", "status", "--config", configPath], logDirectory: directory)
        #expect(await estimated.waitForExit(timeout: .seconds(30)) == 0, "\(estimated.output)")
        #expect(estimated.output.contains("rows\tusers\t~") && estimated.output.contains("(estimated; --exact-rows counts)"), "\(estimated.output)")
    }
}

/// Progress reports of a copy.
final class ProgressLog: @unchecked Sendable {
    // @unchecked: `entries` is guarded by `lock`.
    private let lock = NSLock()
    private var entries: [(table: String, copied: Int, total: Int)] = []
    func add(_ table: String, _ copied: Int, _ total: Int) { lock.withLock { entries.append((table, copied, total)) } }
    var lines: [(table: String, copied: Int, total: Int)] { lock.withLock { entries } }
}

extension StoreLocation {
    var postgresPassword: String? { if case .postgres(let location) = self { location.password } else { nil } }
}
