import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// A send's store work in one call (`admitSend`), and group commit underneath it, run against SQLite,
/// PostgreSQL and the memory store.
@Suite("Send admission in one transaction")
struct SendAdmissionStoreTests {
    static let phone = try! PhoneNumber(parsing: "+15555550100")
    static let ip = LimitCheck(kind: .ip, scope: "p", subject: "203.0.113.7", policy: RatePolicy.parse("100/1m")!)
    static let number = LimitCheck(kind: .number, scope: "p", subject: phone.e164, policy: RatePolicy.parse("2/1h")!)

    static func send(
        at now: Date, limits: [LimitCheck] = [ip, number], pumping: PrefixVelocity.Settings? = nil, prefix: String = "+1555"
    ) -> SendAdmission {
        let session = VerificationSession(
            id: UUID().uuidString, projectID: "p", phoneNumber: phone.e164, region: "US", codeHash: Data([1, 2, 3]), createdAt: now,
            expiresAt: now.addingTimeInterval(300), maxAttempts: 5, jobID: UUID())
        return SendAdmission(session: session, prefix: prefix, limits: limits, pumping: pumping, now: now)
    }

    static func remaining(_ store: any HeraldStoreProtocol, _ check: LimitCheck, now: Date) async throws -> Int64 {
        let tat = try await store.rateStates(kind: check.kind.rawValue, subject: LimitCheck.parse(check.key)!.subject, project: nil).first?.tat
        return GCRA.remaining(tat: tat, now: now.microsecondsSince1970, parameters: GCRA.Parameters(check.policy))
    }

    @Test(
        "an admitted send writes its session and pending ledger row; a refusal names the first refusing limit and writes nothing",
        arguments: StoreKind.allCases)
    func admitsAndRefuses(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date()
            var admitted: [SendAdmission] = []
            for _ in 0..<2 {
                let send = Self.send(at: now)
                #expect(try await store.admitSend(send) == .admitted)
                admitted.append(send)
            }
            for send in admitted {
                let reservation = try await store.reserveCheckAttempt(sessionID: send.session.id)
                #expect(reservation?.session.jobID == send.session.jobID)
                #expect(try await store.deliveryStatus(jobID: send.session.jobID!)?.status == .pending)
            }
            let third = Self.send(at: now)
            guard case .refused(let index, let decision) = try await store.admitSend(third) else {
                Issue.record("the third send within 2/1h was not refused")
                return
            }
            #expect(index == 1)
            #expect(decision.retryAfterDuration > .seconds(1700))
            #expect(try await store.reserveCheckAttempt(sessionID: third.session.id) == nil)
            #expect(try await store.deliveryStatus(jobID: third.session.jobID!) == nil)
            // The refused send gave its IP event back: two of 100 are spent.
            #expect(try await Self.remaining(store, Self.ip, now: now) == 98)
        }
    }

    @Test(
        "a sign-in send to the first-factor number of a user with an SMS second factor is refused inside the admission, spending and writing nothing; other sends to it pass",
        arguments: StoreKind.allCases)
    func refusesSecondFactorHolders(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date()
            let user = UserAccount(
                localID: String(repeating: "m", count: 28), projectID: "p", phoneNumber: Self.phone.e164, createdAt: now, lastLoginAt: now)
            try await store.insertUser(user)
            var signIn = Self.send(at: now)
            signIn.refuseSecondFactorHolders = true
            // No second factor yet: admitted.
            #expect(try await store.admitSend(signIn) == .admitted)
            try await store.addMFAEnrollment(
                MFAEnrollment(enrollmentID: "e1", phoneNumber: "+15555559999", displayName: nil, enrolledAt: now), projectID: "p",
                localID: user.localID)
            var refused = Self.send(at: now)
            refused.refuseSecondFactorHolders = true
            #expect(try await store.admitSend(refused) == .secondFactorHolder)
            #expect(try await store.reserveCheckAttempt(sessionID: refused.session.id) == nil)
            #expect(try await store.deliveryStatus(jobID: refused.session.jobID!) == nil)
            #expect(try await Self.remaining(store, Self.ip, now: now) == 99)
            // The same project's other numbers, another project's same number, and a send that does not ask (an enrolment's code).
            var otherProject = Self.send(at: now, limits: [Self.ip])
            otherProject.refuseSecondFactorHolders = true
            otherProject.session.projectID = "q"
            #expect(try await store.admitSend(otherProject) == .admitted)
            #expect(try await store.admitSend(Self.send(at: now, limits: [Self.ip])) == .admitted)
        }
    }

    @Test(
        "a blocked prefix refuses before any limit is spent; the send that trips pumping blocks it and spends nothing", arguments: StoreKind.allCases)
    func pumping(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date()
            let settings = PrefixVelocity.Settings(enabled: true, window: .seconds(600), multiple: 10, minimumSends: 3, blockFor: .seconds(3600))
            let wide = LimitCheck(kind: .project, scope: "p", subject: "p", policy: RatePolicy.parse("100/1m")!)
            var verdicts: [SendAdmission.Verdict] = []
            for _ in 0..<4 { verdicts.append(try await store.admitSend(Self.send(at: now, limits: [wide], pumping: settings, prefix: "+88216"))) }
            #expect(verdicts == [.admitted, .admitted, .admitted, .tripped])
            // Three sends spent the project limit; the tripping one gave its event back.
            #expect(try await Self.remaining(store, wide, now: now) == 97)
            let blocked = Self.send(at: now, limits: [wide], pumping: settings, prefix: "+88216")
            guard case .blocked(let block) = try await store.admitSend(blocked) else {
                Issue.record("a send to a blocked prefix was not refused as blocked")
                return
            }
            #expect(block.prefix == "+88216")
            #expect(block.reason == "4 sends in 10m against a baseline of 0.0 per window")
            #expect(abs(block.until.timeIntervalSince(now) - 3600) < 1)
            #expect(try await Self.remaining(store, wide, now: now) == 97)
            #expect(try await store.deliveryStatus(jobID: blocked.session.jobID!) == nil)
            // Another prefix is not blocked.
            #expect(try await store.admitSend(Self.send(at: now, limits: [wide], pumping: settings, prefix: "+4479")) == .admitted)
        }
    }

    @Test(
        "concurrent sends from two processes: exactly the allowance is admitted, each with its session and ledger row", arguments: StoreKind.allCases)
    func concurrent(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let now = Date()
            let sends = (0..<60).map { _ in Self.send(at: now) }
            let verdicts = try await withThrowingTaskGroup(of: (Int, SendAdmission.Verdict).self) { group in
                for (index, send) in sends.enumerated() {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask { (index, try await store.admitSend(send)) }
                }
                return try await group.reduce(into: [Int: SendAdmission.Verdict]()) { $0[$1.0] = $1.1 }
            }
            let admitted = verdicts.filter { $0.value == .admitted }.map(\.key)
            #expect(admitted.count == 2)
            for (index, send) in sends.enumerated() {
                let recorded = try await first.deliveryStatus(jobID: send.session.jobID!) != nil
                #expect(recorded == admitted.contains(index))
            }
            #expect(try await Self.remaining(first, Self.ip, now: now) == 98)
            await fixture.tearDown(second)
        }
    }

    /// A policy listed twice gives two entries with one key. SQLite then decides them one at a time (its
    /// single upsert for a send's keys cannot change one row twice), PostgreSQL's routine always does,
    /// and both must agree with the memory model, which spends the key once per entry.
    @Test("a limit listed twice spends its key twice per send, as the memory model does", arguments: StoreKind.sql)
    func duplicatedLimit(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let model = MemoryStore()
            let twice = LimitCheck(kind: .number, scope: "p", subject: Self.phone.e164, policy: RatePolicy.parse("4/1m")!)
            var now = Date(timeIntervalSince1970: 1_800_000_000)
            var verdicts: [String] = []
            for step in 0..<5 {
                let send = Self.send(at: now, limits: [Self.ip, twice, twice])
                let expected = try await model.admitSend(send)
                #expect(try await store.admitSend(send) == expected, "step \(step)")
                verdicts.append("\(expected)".prefix { $0 != "(" }.description)
                now = now.addingTimeInterval(1)
            }
            // Four a minute, two per send: the third send is the first refused.
            #expect(verdicts == ["admitted", "admitted", "refused", "refused", "refused"])
        }
    }

    @Test("calls committed together: one that fails undoes only its own writes, the others stand", arguments: StoreKind.allCases)
    func failingCallInABatch(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date()
            let wide = LimitCheck(kind: .project, scope: "p", subject: "p", policy: RatePolicy.parse("100/1m")!)
            // Twenty sends at once, every fourth reusing the session id of the one before it: of each such
            // pair one fails on the duplicate id after it spent the project limit, and must give it back.
            var sends = (0..<20).map { _ in Self.send(at: now, limits: [wide]) }
            for index in sends.indices where index % 4 == 3 { sends[index].session.id = sends[index - 1].session.id }
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for (index, send) in sends.enumerated() {
                    group.addTask { (index, (try? await store.admitSend(send)) == .admitted) }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            for index in sends.indices where index % 4 == 2 {
                #expect([results[index]!, results[index + 1]!].filter { $0 }.count == 1)
            }
            for index in sends.indices where index % 4 < 2 { #expect(results[index] == true) }
            for (index, send) in sends.enumerated() {
                let recorded = try await store.deliveryStatus(jobID: send.session.jobID!) != nil
                #expect(recorded == results[index])
            }
            #expect(try await Self.remaining(store, wide, now: now) == 100 - 15)
        }
    }

    @Test(
        "send by send, every store decides as the memory model: limits, refusals with Retry-After, pumping trips and blocks",
        arguments: StoreKind.sql)
    func matchesModel(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let model = MemoryStore()
            // A fixed walk (seeded), so every run covers the same verdicts.
            var generator = SplitMix64(seed: 13)
            let settings = PrefixVelocity.Settings(enabled: true, window: .seconds(10), multiple: 3, minimumSends: 6, blockFor: .seconds(30))
            let phones = ["+15555550100", "+15555550101", "+4479460000", "+4479460001"]
            var now = Date(timeIntervalSince1970: 1_800_000_000)
            var seen: Set<String> = []
            for step in 0..<300 {
                now = now.addingTimeInterval(Double(Int.random(in: 0...700, using: &generator)) / 1000)
                let phone = try PhoneNumber(parsing: phones.randomElement(using: &generator)!)
                let limits = [
                    LimitCheck(kind: .number, scope: "p", subject: phone.e164, policy: RatePolicy.parse("3/10s burst 2")!),
                    LimitCheck(kind: .project, scope: "p", subject: "p", policy: RatePolicy.parse("20/10s")!),
                    LimitCheck(kind: .country, scope: "p", subject: phone.region, policy: RatePolicy.parse("12/10s burst 8")!),
                ]
                let session = VerificationSession(
                    id: "s\(step)", projectID: "p", phoneNumber: phone.e164, region: phone.region, codeHash: Data([1]), createdAt: now,
                    expiresAt: now.addingTimeInterval(300), maxAttempts: 5, jobID: UUID())
                let send = SendAdmission(session: session, prefix: phone.prefix(digits: 6), limits: limits, pumping: settings, now: now)
                let expected = try await model.admitSend(send)
                let actual = try await store.admitSend(send)
                #expect(actual == expected, "step \(step)")
                seen.insert("\(expected)".prefix { $0 != "(" }.description)
            }
            // The walk is only worth something if it went through every verdict.
            #expect(seen == ["admitted", "refused", "tripped", "blocked"])
        }
    }
}
