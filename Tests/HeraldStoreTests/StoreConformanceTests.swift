import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// The behaviour every store must have, run against SQLite, PostgreSQL and the memory store. Two
/// handles on one fixture stand for two processes (on several hosts, for PostgreSQL).
@Suite("Store conformance")
struct StoreConformanceTests {
    func session(id: String = UUID().uuidString, max: Int = 3, expiresIn: TimeInterval = 300) -> VerificationSession {
        let now = Date()
        return VerificationSession(
            id: id, projectID: "p", phoneNumber: "+15555550100", codeHash: Data([1, 2, 3]), createdAt: now,
            expiresAt: now.addingTimeInterval(expiresIn), maxAttempts: max, jobID: UUID())
    }

    @Test("the SQLite store's directory is created 0700 and its files (database, -wal, -shm) 0600")
    func filePermissions() async throws {
        let directory = NSTemporaryDirectory() + "herald-store-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let nested = directory + "/state"
        let store = try await onOwnThread { try SQLStore(sqlitePath: nested + "/herald.sqlite") }
        try await store.insertSession(session())
        func mode(_ path: String) throws -> Int {
            try #require((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue)
        }
        #expect(try mode(nested) == 0o700)
        for suffix in ["", "-wal", "-shm"] {
            #expect(try mode(nested + "/herald.sqlite" + suffix) == 0o600, "herald.sqlite\(suffix)")
        }
        await store.close()
    }

    @Test("a session spends exactly maxAttempts reservations, then reports none left", arguments: StoreKind.allCases)
    func reservations(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
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
    }

    @Test("concurrent checks from two processes never spend more than the budget", arguments: StoreKind.allCases)
    func concurrentReservations(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
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
            await fixture.tearDown(second)
        }
    }

    @Test("a session is consumed once, also when two processes race", arguments: StoreKind.allCases)
    func consumeOnce(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, store in
            let second = try await fixture.open()
            let stored = session()
            try await store.insertSession(stored)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    let handle = index.isMultiple(of: 2) ? store : second
                    group.addTask { try await handle.consumeSession(id: stored.id, at: Date()) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
            let after = try #require(try await store.reserveCheckAttempt(sessionID: stored.id))
            #expect(after.reserved == false)
            #expect(after.session.consumedAt != nil)
            await fixture.tearDown(second)
        }
    }

    @Test("expired sessions are purged", arguments: StoreKind.allCases)
    func purge(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let old = session(expiresIn: -10)
            let fresh = session()
            try await store.insertSession(old)
            try await store.insertSession(fresh)
            #expect(try await store.purgeSessions(expiredBefore: Date(), limit: 100) == 1)
            #expect(try await store.reserveCheckAttempt(sessionID: old.id) == nil)
            #expect(try await store.reserveCheckAttempt(sessionID: fresh.id) != nil)
        }
    }

    @Test(
        "a purge statement deletes at most its limit of expired sessions, the longest expired first, and no fresh one", arguments: StoreKind.allCases)
    func purgeInChunks(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            // 25 expired a second apart (the first expired longest ago), with fresh sessions among them.
            let expired = (0..<25).map { session(expiresIn: -100 + Double($0)) }
            let fresh = (0..<5).map { _ in session() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for item in expired + fresh { group.addTask { try await store.insertSession(item) } }
                try await group.waitForAll()
            }
            #expect(try await store.purgeSessions(expiredBefore: Date(), limit: 10) == 10)
            for item in expired.prefix(10) { #expect(try await store.reserveCheckAttempt(sessionID: item.id) == nil) }
            for item in expired.dropFirst(10) + fresh { #expect(try await store.reserveCheckAttempt(sessionID: item.id) != nil) }
            #expect(try await store.purgeSessions(expiredBefore: Date(), limit: 10) == 10)
            #expect(try await store.purgeSessions(expiredBefore: Date(), limit: 10) == 5)
            #expect(try await store.purgeSessions(expiredBefore: Date(), limit: 10) == 0)
            for item in expired { #expect(try await store.reserveCheckAttempt(sessionID: item.id) == nil) }
            for item in fresh { #expect(try await store.reserveCheckAttempt(sessionID: item.id) != nil) }
        }
    }

    @Test(
        "a resend leaves the number's older sessions open; consuming any one closes the others of its purpose only",
        arguments: StoreKind.allCases)
    func consumeClosesSiblings(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            var older = session()
            older.createdAt = Date().addingTimeInterval(-5)
            let newer = session()
            var enrolment = session()
            enrolment.purpose = .mfaEnrollment(localID: "u1")
            var otherNumber = session()
            otherNumber.phoneNumber = "+15555550101"
            for stored in [older, newer, enrolment, otherNumber] { try await store.insertSession(stored) }
            #expect(try await store.latestOpenSession(projectID: "p", phoneNumber: "+15555550100")?.id == newer.id)
            #expect(try await store.reserveCheckAttempt(sessionID: older.id)?.reserved == true)
            #expect(try await store.consumeSession(id: older.id, at: Date()))
            #expect(try await store.consumeSession(id: newer.id, at: Date()) == false)
            #expect(try await store.reserveCheckAttempt(sessionID: newer.id)?.reserved == false)
            #expect(try await store.latestOpenSession(projectID: "p", phoneNumber: "+15555550100") == nil)
            #expect(Set(try await store.openSessions(projectID: "p", now: Date()).map(\.id)) == [enrolment.id, otherNumber.id])
        }
    }

    @Test("two sessions of one number signing in at once: exactly one wins", arguments: StoreKind.allCases)
    func siblingsRace(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            for _ in 0..<10 {
                let sessions = [session(), session(), session(), session()]
                for stored in sessions { try await first.insertSession(stored) }
                let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for (index, stored) in sessions.enumerated() {
                        let handle = index.isMultiple(of: 2) ? first : second
                        group.addTask { try await handle.consumeSession(id: stored.id, at: Date()) }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(wins == 1)
            }
        }
    }

    @Test("the same phone number finds the same user, created once even under a race", arguments: StoreKind.allCases)
    func users(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let results = try await withThrowingTaskGroup(of: (UserAccount, Bool).self) { group in
                for index in 0..<20 {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask { try await store.findOrCreateUser(projectID: "p", phoneNumber: "+15555550100", proven: true, now: Date()) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results.map(\.0.localID)).count == 1)
            #expect(results.filter(\.1).count == 1)
            let localID = results[0].0.localID
            #expect(localID.count == 28)
            #expect(localID.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
            let other = try await first.findOrCreateUser(projectID: "other", phoneNumber: "+15555550100", proven: false, now: Date())
            #expect(other.created)
            #expect(other.user.localID != localID)
            #expect(try await first.user(projectID: "p", localID: localID)?.phoneNumber == "+15555550100")
            #expect(try await first.user(projectID: "other", localID: localID) == nil)
            await fixture.tearDown(second)
        }
    }

    @Test("texts read back byte for byte: empty, short, non-ASCII and longer than a page", arguments: StoreKind.allCases)
    func textsRoundTrip(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date(timeIntervalSince1970: 1_800_000_000.123)
            let names = ["", "A", "Zoë Ångström 😀 王小明", String(repeating: "long name ✓ ", count: 600)]
            for (index, name) in names.enumerated() {
                let user = UserAccount(
                    localID: "t\(index)".padding(toLength: 28, withPad: "0", startingAt: 0), projectID: "p", phoneNumber: nil,
                    email: "user\(index)@example.com", emailVerified: false, passwordHash: name, displayName: name, emailLinkSignin: false,
                    createdAt: now, lastLoginAt: now, validSince: now, disabled: false)
                try await store.insertUser(user)
                let read = try #require(try await store.user(projectID: "p", email: user.email!))
                #expect(read == user)
                #expect(read.displayName?.utf8.count == name.utf8.count)
            }
        }
    }

    @Test("two accounts of a project never share an email or a phone number; a user reads back as written", arguments: StoreKind.allCases)
    func accountConflicts(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date(timeIntervalSince1970: 1_800_000_000.123)
            let alice = UserAccount(
                localID: "a".padding(toLength: 28, withPad: "1", startingAt: 0), projectID: "p", phoneNumber: "+15555550100",
                email: "alice@example.com", emailVerified: true, passwordHash: "h", displayName: "Alice", emailLinkSignin: true,
                createdAt: now, lastLoginAt: now, validSince: now, disabled: false)
            try await store.insertUser(alice)
            #expect(try await store.user(projectID: "p", email: "ALICE@example.com") == alice)
            var bob = alice
            bob.localID = "b".padding(toLength: 28, withPad: "2", startingAt: 0)
            bob.phoneNumber = nil
            await #expect(throws: AccountConflict.emailExists) { try await store.insertUser(bob) }
            bob.email = "bob@example.com"
            try await store.insertUser(bob)
            bob.phoneNumber = "+15555550100"
            await #expect(throws: AccountConflict.phoneNumberExists) { try await store.updateUser(bob) }
            var twin = alice
            twin.email = "twin@example.com"
            twin.phoneNumber = "+15555550177"
            await #expect(throws: AccountConflict.localIDExists) { try await store.insertUser(twin) }
            // The same email in another project is another account.
            var elsewhere = alice
            elsewhere.projectID = "q"
            try await store.insertUser(elsewhere)

            let enrollment = MFAEnrollment(enrollmentID: "e1", phoneNumber: "+15555550199", displayName: "work", enrolledAt: now)
            try await store.addMFAEnrollment(enrollment, projectID: "p", localID: alice.localID)
            #expect(try await store.user(projectID: "p", phoneNumber: "+15555550100")?.mfaEnrollments == [enrollment])
            #expect(try await store.users(projectID: "p", after: nil, limit: 10).map(\.localID) == [alice.localID, bob.localID])
            #expect(try await store.users(projectID: "p", after: alice.localID, limit: 10).map(\.localID) == [bob.localID])
            #expect(try await store.removeMFAEnrollment(projectID: "p", localID: alice.localID, enrollmentID: "e1"))
            #expect(try await store.removeMFAEnrollment(projectID: "p", localID: alice.localID, enrollmentID: "e1") == false)

            try await store.insertRefreshToken(.init(tokenHash: "t", projectID: "p", localID: alice.localID, provider: "phone", createdAt: now))
            #expect(try await store.deleteUser(projectID: "p", localID: alice.localID))
            #expect(try await store.deleteUser(projectID: "p", localID: alice.localID) == false)
            #expect(try await store.refreshToken(hash: "t") == nil)
            #expect(try await store.deleteAllUsers(projectID: "p") == 1)
            #expect(try await store.user(projectID: "q", email: "alice@example.com") != nil)
        }
    }

    @Test(
        "an identity-provider account belongs to one user, a user has one per provider, and racing sign-ins create one user",
        arguments: StoreKind.allCases)
    func federatedIdentities(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, store in
            let now = Date(timeIntervalSince1970: 1_800_000_000.456)
            let apple = FederatedIdentity(
                providerID: "apple.com", federatedID: "001234.abc", email: "x@privaterelay.appleid.com", emailVerified: true,
                isPrivateEmail: true, displayName: "Ada", linkedAt: now)
            let ada = UserAccount(
                localID: "a".padding(toLength: 28, withPad: "1", startingAt: 0), projectID: "p", email: "x@privaterelay.appleid.com",
                emailVerified: true, createdAt: now, lastLoginAt: now, identities: [apple])
            try await store.insertUser(ada)
            let found = try #require(try await store.user(projectID: "p", providerID: "apple.com", federatedID: "001234.abc"))
            #expect(found == ada)
            #expect(try await store.user(projectID: "q", providerID: "apple.com", federatedID: "001234.abc") == nil)
            #expect(try await store.user(projectID: "p", providerID: "apple.com", federatedID: "other") == nil)

            // Another user cannot take the same Apple account, by insert or by link.
            var bob = UserAccount(localID: "b".padding(toLength: 28, withPad: "2", startingAt: 0), projectID: "p", createdAt: now, lastLoginAt: now)
            bob.identities = [apple]
            await #expect(throws: AccountConflict.federatedIDExists) { try await store.insertUser(bob) }
            #expect(try await store.user(projectID: "p", localID: bob.localID) == nil, "the refused insert left no user behind")
            bob.identities = []
            try await store.insertUser(bob)
            await #expect(throws: AccountConflict.federatedIDExists) { try await store.linkIdentity(apple, projectID: "p", localID: bob.localID) }
            // Ada already has an Apple account: a second one is refused; the same one is refreshed.
            var second = apple
            second.federatedID = "009999.def"
            await #expect(throws: AccountConflict.providerAlreadyLinked) {
                try await store.linkIdentity(second, projectID: "p", localID: ada.localID)
            }
            var refreshed = apple
            refreshed.email = "Ada@Example.com"
            refreshed.isPrivateEmail = false
            refreshed.displayName = nil
            refreshed.linkedAt = now.addingTimeInterval(60)
            try await store.linkIdentity(refreshed, projectID: "p", localID: ada.localID)
            let identity = try #require(try await store.user(projectID: "p", localID: ada.localID)?.identities.first)
            #expect(identity.email == "ada@example.com" && identity.isPrivateEmail == false)
            #expect(identity.displayName == "Ada", "a sign-in without a name keeps the one Apple gave once")
            #expect(identity.linkedAt == apple.linkedAt, "linking again keeps when it was first linked")
            // updateUser leaves identities alone; unlinking removes them; deleting the user removes them.
            var renamed = try #require(try await store.user(projectID: "p", localID: ada.localID))
            renamed.identities = []
            renamed.displayName = "Ada L."
            try await store.updateUser(renamed)
            #expect(try await store.user(projectID: "p", localID: ada.localID)?.identities.count == 1)
            #expect(try await store.unlinkIdentity(projectID: "p", localID: ada.localID, providerID: "apple.com"))
            #expect(try await store.unlinkIdentity(projectID: "p", localID: ada.localID, providerID: "apple.com") == false)
            try await store.linkIdentity(apple, projectID: "p", localID: bob.localID)
            #expect(try await store.user(projectID: "p", providerID: "apple.com", federatedID: "001234.abc")?.localID == bob.localID)
            #expect(try await store.deleteUser(projectID: "p", localID: bob.localID))
            #expect(try await store.user(projectID: "p", providerID: "apple.com", federatedID: "001234.abc") == nil)

            // Two processes creating the user of one new Apple account: exactly one insert wins.
            let other = try await fixture.open()
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<8 {
                    let handle = index.isMultiple(of: 2) ? store : other
                    group.addTask {
                        let user = UserAccount(
                            localID: "r\(index)".padding(toLength: 28, withPad: "0", startingAt: 0), projectID: "p", createdAt: now,
                            lastLoginAt: now,
                            identities: [FederatedIdentity(providerID: "apple.com", federatedID: "race", linkedAt: now)])
                        do {
                            try await handle.insertUser(user)
                            return true
                        } catch AccountConflict.federatedIDExists {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
        }
    }

    @Test("an identity-provider credential is spent once, also when two processes race, and expired ones are purged", arguments: StoreKind.allCases)
    func credentialReplay(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, store in
            let other = try await fixture.open()
            let expiry = Date(timeIntervalSince1970: 1_800_000_600)
            let spent = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    let handle = index.isMultiple(of: 2) ? store : other
                    group.addTask { try await handle.spendCredential(hash: "h1", projectID: "p", expiresAt: expiry) }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(spent.filter { $0 }.count == 1)
            #expect(try await store.spendCredential(hash: "h2", projectID: "p", expiresAt: expiry.addingTimeInterval(600)))
            #expect(try await store.purgeCredentials(expiredBefore: expiry.addingTimeInterval(1), limit: 10) == 1)
            #expect(try await store.spendCredential(hash: "h1", projectID: "p", expiresAt: expiry), "purged: the expiry check refuses it now")
            #expect(try await store.spendCredential(hash: "h2", projectID: "p", expiresAt: expiry) == false)
        }
    }

    @Test("an admin session is seen by every process until it expires or is deleted, once; expired ones are purged", arguments: StoreKind.allCases)
    func adminSessions(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, store in
            let other = try await fixture.open()
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            try await store.insertAdminSession(hash: "s1", keyID: "k1", expiresAt: now.addingTimeInterval(60))
            try await store.insertAdminSession(hash: "s2", keyID: "k2", expiresAt: now.addingTimeInterval(3600))
            #expect(try await other.adminSession(hash: "s1", now: now) == "k1")
            #expect(try await other.adminSession(hash: "s1", now: now.addingTimeInterval(60)) == nil, "expired at its expiry")
            #expect(try await other.adminSession(hash: "nope", now: now) == nil)
            #expect(try await other.deleteAdminSession(hash: "s2"))
            #expect(try await store.adminSession(hash: "s2", now: now) == nil, "deleted through the other process")
            #expect(try await store.deleteAdminSession(hash: "s2") == false)
            #expect(try await store.purgeAdminSessions(expiredBefore: now.addingTimeInterval(61), limit: 10) == 1)
            #expect(try await store.deleteAdminSession(hash: "s1") == false, "purged")
        }
    }

    @Test("a provider's breaker is one row all processes share: a stale version loses, racing updates all land", arguments: StoreKind.allCases)
    func breakers(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, store in
            let other = try await fixture.open()
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let settings = CircuitBreaker.Settings(minimumCalls: 1000, consecutiveFailures: 1000)
            #expect(try await store.breaker(provider: "twilio") == nil)
            let fresh = CircuitBreaker(settings: settings, now: now).snapshot
            #expect(try await store.replaceBreaker(provider: "twilio", snapshot: fresh, expected: nil, now: now))
            #expect(try await other.replaceBreaker(provider: "twilio", snapshot: fresh, expected: nil, now: now) == false, "the row exists")
            let stored = try #require(try await other.breaker(provider: "twilio"))
            #expect(stored.version == 1 && stored.snapshot == fresh && stored.updatedAt == now)
            #expect(try await other.replaceBreaker(provider: "twilio", snapshot: fresh, expected: 1, now: now))
            #expect(try await store.replaceBreaker(provider: "twilio", snapshot: fresh, expected: 1, now: now) == false, "stale version")
            // Forty failures from two processes at once: every one is counted.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    let handle = index % 2 == 0 ? store : other
                    group.addTask {
                        _ = try await handle.updateBreaker(provider: "twilio", settings: settings, now: now) { $0.record(failed: true, now: now) }
                    }
                }
                try await group.waitForAll()
            }
            let counted = try #require(try await store.breaker(provider: "twilio"))
            #expect(CircuitBreaker(settings: settings, snapshot: counted.snapshot).consecutiveFailures == 40)
            #expect(counted.version == 42)
            _ = try await other.updateBreaker(provider: "vonage", settings: settings, now: now) { $0.override(.open, now: now) }
            let all = try await store.breakers()
            #expect(Set(all.keys) == ["twilio", "vonage"])
            #expect(all["vonage"]?.snapshot.state == .forcedOpen(since: now))
        }
    }

    @Test("second-factor lookups by first-factor number answer each caller right, also when many arrive at once", arguments: StoreKind.allCases)
    func secondFactorLookups(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date()
            for (index, enrolled) in [true, false, true].enumerated() {
                let user = UserAccount(
                    localID: "u\(index)".padding(toLength: 28, withPad: "0", startingAt: 0), projectID: "p", phoneNumber: "+1555555010\(index)",
                    createdAt: now, lastLoginAt: now)
                try await store.insertUser(user)
                if enrolled {
                    try await store.addMFAEnrollment(
                        MFAEnrollment(enrollmentID: "e\(index)", phoneNumber: "+15555559999", displayName: nil, enrolledAt: now), projectID: "p",
                        localID: user.localID)
                }
            }
            let questions = (0..<60).map { index in (project: index % 7 == 0 ? "q" : "p", phone: "+1555555010\(index % 4)") }
            let answers = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for (index, question) in questions.enumerated() {
                    group.addTask { (index, try await store.hasSecondFactor(projectID: question.project, phoneNumber: question.phone)) }
                }
                return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            for (index, question) in questions.enumerated() {
                let expected = question.project == "p" && ["+15555550100", "+15555550102"].contains(question.phone)
                #expect(answers[index] == expected, "\(question)")
            }
        }
    }

    @Test("refresh tokens are found by hash", arguments: StoreKind.allCases)
    func refreshTokens(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let record = RefreshTokenRecord(
                tokenHash: "h1", projectID: "p", localID: "u", provider: "phone", createdAt: Date(timeIntervalSince1970: 1000))
            try await store.insertRefreshToken(record)
            #expect(try await store.refreshToken(hash: "h1") == record)
            #expect(try await store.refreshToken(hash: "h2") == nil)
        }
    }

    @Test("an oob code is consumed once, also when two processes race, and expired codes are purged", arguments: StoreKind.allCases)
    func oobCodes(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, store in
            let second = try await fixture.open()
            let now = Date(timeIntervalSince1970: Double(Int(Date().timeIntervalSince1970)))
            let code = OobRecord(
                codeHash: "c1", projectID: "p", requestType: "EMAIL_SIGNIN", email: "a@example.com", createdAt: now,
                expiresAt: now.addingTimeInterval(600), jobID: UUID(), linkSealed: "sealed")
            let old = OobRecord(
                codeHash: "c0", projectID: "p", requestType: "EMAIL_SIGNIN", email: "a@example.com", createdAt: now.addingTimeInterval(-900),
                expiresAt: now.addingTimeInterval(-300))
            try await store.insertOobCode(code)
            try await store.insertOobCode(old)
            #expect(try await second.oobCode(hash: "c1") == code)
            #expect(try await store.openOobCodes(projectID: "p", now: now).map(\.codeHash) == ["c1"])
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    let handle = index.isMultiple(of: 2) ? store : second
                    group.addTask { try await handle.consumeOobCode(hash: "c1", at: now) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
            #expect(try await store.oobCode(hash: "c1")?.consumedAt == now)
            #expect(try await store.purgeOobCodes(expiredBefore: now, limit: 10) == 1)
            try await store.deleteOobCode(hash: "c1")
            #expect(try await store.oobCode(hash: "c1") == nil)
            await fixture.tearDown(second)
        }
    }

    @Test(
        "the delivery ledger lets a job be sent once, retried after a recorded failure, never after an unknown outcome",
        arguments: StoreKind.allCases)
    func ledger(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let job = UUID()
            try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+1", now: Date())
            #expect(try await store.deliveryStatus(jobID: job)?.status == .pending)
            #expect(
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w1", now: Date(), reclaimInDoubt: false)
                    == .claimed(attempt: 1))
            // Redelivered while w1 never recorded an outcome: in doubt, not sent again.
            #expect(
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w2", now: Date(), reclaimInDoubt: false)
                    == .inDoubt(owner: "w1"))
            try await store.recordDelivery(jobID: job, status: .retrying, reason: "503", now: Date())
            #expect(
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w2", now: Date(), reclaimInDoubt: false)
                    == .claimed(attempt: 2))
            try await store.recordDelivery(jobID: job, status: .sent, reason: nil, now: Date())
            #expect(
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w3", now: Date(), reclaimInDoubt: false)
                    == .finished(.sent))
            let status = try #require(try await store.deliveryStatus(jobID: job))
            #expect(status.status == .sent)
            #expect(status.attempts == 2)
        }
    }

    @Test("a job is claimed by exactly one of many workers racing on several processes", arguments: StoreKind.allCases)
    func concurrentClaims(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let job = UUID()
            try await first.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+1", now: Date())
            let claims = try await withThrowingTaskGroup(of: DeliveryClaim.self) { group in
                for index in 0..<16 {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask {
                        try await store.claimDelivery(
                            jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w\(index)", now: Date(), reclaimInDoubt: false)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(claims.filter { $0 == .claimed(attempt: 1) }.count == 1)
            #expect(claims.filter { if case .inDoubt = $0 { true } else { false } }.count == 15)
            await fixture.tearDown(second)
        }
    }

    @Test(
        "a job without a ledger row, or re-addressed, is never claimed; in-doubt jobs can be reclaimed on request",
        arguments: StoreKind.allCases)
    func unknownMismatchAndReclaim(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let job = UUID()
            func claim(_ project: String = "p", _ type: JobType = .sms, _ to: String = "+1", owner: String = "w1", reclaim: Bool = false)
                async throws -> DeliveryClaim
            {
                try await store.claimDelivery(
                    jobID: job, projectID: project, type: type, destination: to, owner: owner, now: Date(), reclaimInDoubt: reclaim)
            }
            #expect(try await claim() == .unknown)
            #expect(try await store.deliveryStatus(jobID: job) == nil)
            try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+1", now: Date())
            #expect(try await claim("p", .sms, "+2") == .mismatch(field: "to"))
            #expect(try await claim("q") == .mismatch(field: "project"))
            #expect(try await claim("p", .email) == .mismatch(field: "type"))
            #expect(try await store.deliveryStatus(jobID: job)?.status == .pending)
            #expect(try await claim() == .claimed(attempt: 1))
            #expect(try await claim(owner: "w2", reclaim: true) == .claimed(attempt: 2))
            try await store.recordDelivery(jobID: job, status: .abandoned, reason: "publish failed", now: Date())
            #expect(try await claim(owner: "w3", reclaim: true) == .finished(.abandoned))
            #expect(try await store.deliveryStatus(jobID: job)?.reason == "publish failed")
        }
    }

    @Test("the purges of receipts, email codes and credentials delete at most their limit, the oldest first", arguments: StoreKind.allCases)
    func smallPurgesInChunks(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date(timeIntervalSince1970: Double(Int(Date().timeIntervalSince1970)))
            for index in 0..<3 {
                let at = now.addingTimeInterval(Double(index - 10))
                try await store.insertReceipt(
                    AppReceipt(
                        receiptHash: "r\(index)", projectID: "p", bundleID: "com.example", secretHash: "s", deviceTokenHash: "d", createdAt: at))
                try await store.insertOobCode(
                    OobRecord(
                        codeHash: "c\(index)", projectID: "p", requestType: "EMAIL_SIGNIN", email: "a@example.com",
                        createdAt: at.addingTimeInterval(-600),
                        expiresAt: at))
                #expect(try await store.spendCredential(hash: "h\(index)", projectID: "p", expiresAt: at))
            }
            #expect(try await store.purgeReceipts(issuedBefore: now, limit: 2) == 2)
            #expect(try await store.receipt(hash: "r1") == nil)
            #expect(try await store.receipt(hash: "r2") != nil)
            #expect(try await store.purgeOobCodes(expiredBefore: now, limit: 2) == 2)
            #expect(try await store.oobCode(hash: "c1") == nil)
            #expect(try await store.oobCode(hash: "c2") != nil)
            #expect(try await store.purgeCredentials(expiredBefore: now, limit: 2) == 2)
            // Still recorded as spent: a second spend is refused.
            #expect(try await store.spendCredential(hash: "h2", projectID: "p", expiresAt: now.addingTimeInterval(60)) == false)
            #expect(try await store.purgeReceipts(issuedBefore: now, limit: 2) == 1)
            #expect(try await store.purgeOobCodes(expiredBefore: now, limit: 2) == 1)
            #expect(try await store.purgeCredentials(expiredBefore: now, limit: 2) == 1)
        }
    }

    @Test("app receipts and refused device tokens are kept by hash", arguments: StoreKind.allCases)
    func appVerification(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let receipt = AppReceipt(receiptHash: "r", projectID: "p", bundleID: "com.example", secretHash: "s", deviceTokenHash: "d", createdAt: now)
            try await store.insertReceipt(receipt)
            #expect(try await store.receipt(hash: "r") == receipt)
            #expect(try await store.purgeReceipts(issuedBefore: now, limit: 10) == 0)
            #expect(try await store.purgeReceipts(issuedBefore: now.addingTimeInterval(1), limit: 10) == 1)
            #expect(try await store.receipt(hash: "r") == nil)
            try await store.markDeviceTokenInvalid(hash: "d", reason: "BadDeviceToken", since: now)
            try await store.markDeviceTokenInvalid(hash: "d", reason: "Unregistered", since: now)
            #expect(try await store.invalidDeviceToken(hash: "d") == "Unregistered")
            #expect(try await store.invalidDeviceToken(hash: "x") == nil)
        }
    }

    @Test(
        "migrations run once, also when ten processes start at once, and a reopened store keeps its data", arguments: StoreKind.sql)
    func migrations(_ kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let stores = try await withThrowingTaskGroup(of: SQLStore.self) { group in
            for _ in 0..<10 { group.addTask { try await fixture.openSQL() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let stored = session()
        try await stores[0].insertSession(stored)
        for store in stores { await store.close() }
        let reopened = try await fixture.openSQL()
        #expect(try await reopened.reserveCheckAttempt(sessionID: stored.id)?.reserved == true)
        let status = try await reopened.status()
        #expect(status.version == status.latest)
        #expect(status.backend.rawValue == kind.rawValue)
        #expect(status.rows.first { $0.table == "verification_sessions" }?.rows == 1)
        #expect(status.rows.first { $0.table == "users" }?.rows == 0)
        await fixture.tearDown(reopened)
    }

    @Test("store status reads an empty database as version 0 without migrating it", arguments: StoreKind.sql)
    func statusWithoutMigrating(_ kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let store = try await fixture.openSQL(migrate: false)
        let empty = try await store.status()
        #expect(empty.version == 0)
        #expect(empty.rows.isEmpty)
        #expect(try await store.status().version == 0)
        let migrated = try await fixture.openSQL()
        #expect(try await store.status().version == Migrations.latestVersion)
        await fixture.tearDown(store, migrated)
    }

    /// On PostgreSQL, `store status` reads the server's running counts instead of scanning every
    /// table under a snapshot; SQLite keeps none and counts. `store migrate` counts nothing.
    @Test(
        "row counts: estimated on PostgreSQL from its own statistics, counted on SQLite, none when not asked",
        arguments: StoreKind.sql)
    func rowCounts(_ kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let store = try await fixture.openSQL()
        let now = Date()
        for index in 0..<25 {
            try await store.insertUser(
                UserAccount(
                    localID: "u\(index)", projectID: "p", phoneNumber: nil, email: nil, emailVerified: false, passwordHash: nil, displayName: nil,
                    emailLinkSignin: false, createdAt: now, lastLoginAt: now, validSince: now, disabled: false))
        }
        let none = try await store.status(rows: .none)
        #expect(none.rows.isEmpty && none.version == Migrations.latestVersion)
        let exact = try await store.status(rows: .exact)
        #expect(exact.rowsEstimated == false && exact.rows.first { $0.table == "users" }?.rows == 25)
        // The server publishes a session's counts within a second or so of its commits going idle.
        var estimated = try await store.status(rows: .estimated)
        let caughtUp = await eventually(timeout: .seconds(20)) {
            estimated = (try? await store.status(rows: .estimated)) ?? estimated
            return estimated.rows.first { $0.table == "users" }?.rows == 25
        }
        #expect(caughtUp, "\(estimated.rows)")
        #expect(estimated.rowsEstimated == (kind == .postgres))
        #expect(estimated.rows.map(\.table) == exact.rows.map(\.table))
        await fixture.tearDown(store)
    }
}
