import Foundation
import HeraldCore
import Testing

@testable import HeraldStore

/// The ledger as operators read it, on SQLite, PostgreSQL (through `herald_batch_v8`) and the memory
/// store: each transition kept as an event, listings newest first with filters and stable paging, the
/// purge after retention.
@Suite("Message ledger")
struct MessageLedgerTests {
    static let base = Date(timeIntervalSince1970: 1_790_000_000)

    /// Many workers' claims and outcomes at once go to the store together (one group commit on SQLite,
    /// one `herald_batch_v8` call on PostgreSQL, where successful claims and outcomes of jobs named
    /// once are two set-based statements and everything else runs one by one): each is answered and
    /// recorded as if it had come alone.
    @Test("claims and outcomes arriving together are each answered and recorded as if alone", arguments: StoreKind.allCases)
    func together(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let t = Self.base
            let jobs = (0..<24).map { _ in UUID() }
            for (index, job) in jobs.enumerated() {
                try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+44770090\(1000 + index)", now: t)
            }
            for job in jobs[20..<24] { try await store.recordDelivery(jobID: job, status: .abandoned, reason: "publish failed", now: t) }
            let description = DeliveryDescription(template: "verification", locale: "de", provider: "http")
            func claim(_ job: UUID, to: String, owner: String, at: TimeInterval) async throws -> DeliveryClaim {
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: to, owner: owner, description: description,
                    now: t.addingTimeInterval(at), reclaimInDoubt: false)
            }
            func number(_ index: Int) -> String { "+44770090\(1000 + index)" }

            // Claims: 16 that succeed, the first of them named twice (one claims, the other finds it in
            // doubt), 4 for another number, 4 for jobs the ledger never saw, 4 for abandoned jobs.
            var claims: [(job: UUID, to: String, owner: String)] = jobs[0..<16].enumerated().map { ($1, number($0), "w\($0)") }
            claims.append((jobs[0], number(0), "w99"))
            claims += jobs[16..<20].map { ($0, "+15550000000", "w1") }
            let strangers = (0..<4).map { _ in UUID() }
            claims += strangers.map { ($0, "+15550000000", "w1") }
            claims += jobs[20..<24].enumerated().map { ($1, number(20 + $0), "w1") }
            let answers = try await withThrowingTaskGroup(of: (Int, DeliveryClaim).self) { group in
                for (index, claimed) in claims.enumerated() {
                    group.addTask { (index, try await claim(claimed.job, to: claimed.to, owner: claimed.owner, at: 1)) }
                }
                return try await group.reduce(into: [Int: DeliveryClaim]()) { $0[$1.0] = $1.1 }
            }
            let first = [answers[0], answers[16]]
            #expect(first.filter { $0 == .claimed(attempt: 1) }.count == 1)
            #expect(first.contains(.inDoubt(owner: "w0")) || first.contains(.inDoubt(owner: "w99")))
            for index in 1..<16 { #expect(answers[index] == .claimed(attempt: 1)) }
            for index in 17..<21 { #expect(answers[index] == .mismatch(field: "to")) }
            for index in 21..<25 { #expect(answers[index] == .unknown) }
            for index in 25..<29 { #expect(answers[index] == .finished(.abandoned)) }

            // Outcomes: even jobs sent, odd ones to retry, and one for a job the ledger never saw.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, job) in jobs[0..<16].enumerated() {
                    group.addTask {
                        if index.isMultiple(of: 2) {
                            try await store.recordDelivery(
                                jobID: job, status: .sent, reason: nil, segments: SMSSegments("Your code is 123456"),
                                providerMessageID: "gw-\(index)", detail: nil, now: t.addingTimeInterval(2))
                        } else {
                            try await store.recordDelivery(
                                jobID: job, status: .retrying, reason: "HTTP 503", segments: nil, providerMessageID: nil,
                                detail: "attempt 1 failed: HTTP 503", now: t.addingTimeInterval(2))
                        }
                    }
                }
                group.addTask { try await store.recordDelivery(jobID: strangers[0], status: .sent, reason: nil, now: t.addingTimeInterval(2)) }
                try await group.waitForAll()
            }
            #expect(try await store.message(id: strangers[0]) == nil)
            for (index, job) in jobs[0..<16].enumerated() {
                let message = try #require(try await store.message(id: job))
                #expect(message.attempts == 1)
                #expect(message.template == "verification")
                #expect(message.provider == "http")
                #expect(message.updatedAt == t.addingTimeInterval(2))
                if index.isMultiple(of: 2) {
                    #expect(message.status == .sent)
                    #expect(message.providerMessageID == "gw-\(index)")
                    #expect(message.encoding == "GSM-7")
                    #expect(message.events.map(\.status) == [.queued, .sending, .sent])
                } else {
                    #expect(message.status == .retrying)
                    #expect(message.lastError == "HTTP 503")
                    #expect(message.events.map(\.status) == [.queued, .sending, .queued])
                    #expect(message.events.last?.detail == "attempt 1 failed: HTTP 503")
                }
            }
            for job in jobs[16..<20] { #expect(try await store.message(id: job)?.status == .pending) }

            // Claimed again together: the retries go out a second time, the sent ones are finished.
            let again = try await withThrowingTaskGroup(of: (Int, DeliveryClaim).self) { group in
                for (index, job) in jobs[0..<16].enumerated() {
                    group.addTask { (index, try await claim(job, to: number(index), owner: "w2", at: 3)) }
                }
                return try await group.reduce(into: [Int: DeliveryClaim]()) { $0[$1.0] = $1.1 }
            }
            for index in 0..<16 {
                #expect(again[index] == (index.isMultiple(of: 2) ? .finished(.sent) : .claimed(attempt: 2)))
            }
            let retried = try #require(try await store.message(id: jobs[1]))
            #expect(retried.events.map(\.status) == [.queued, .sending, .queued, .sending])
            #expect(retried.events.last?.detail == "attempt 2 by w2")
        }
    }

    /// A second copy of a job that finds it still sending is in doubt and records `uncertain`; by then the
    /// first attempt may have recorded its outcome, which must stand (an operator would otherwise settle a
    /// message that was sent). Over `sending` itself, `uncertain` is recorded as before.
    @Test("an in-doubt copy's uncertain replaces only sending, never the outcome recorded meanwhile", arguments: StoreKind.allCases)
    func uncertainOnlyOverSending(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let t = Self.base
            let description = DeliveryDescription(template: "verification", locale: "de", provider: "http")
            func claim(_ job: UUID, _ owner: String) async throws -> DeliveryClaim {
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+447700900123", owner: owner, description: description,
                    now: t.addingTimeInterval(1), reclaimInDoubt: false)
            }
            let raced = UUID()
            let alone = UUID()
            for job in [raced, alone] {
                try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+447700900123", now: t)
                #expect(try await claim(job, "w1") == .claimed(attempt: 1))
                #expect(try await claim(job, "w2") == .inDoubt(owner: "w1"))
            }
            try await store.recordDelivery(
                jobID: raced, status: .sent, reason: nil, segments: nil, providerMessageID: "gw-1", detail: nil, now: t.addingTimeInterval(2))
            for job in [raced, alone] {
                try await store.recordDelivery(
                    jobID: job, status: .uncertain, reason: "an earlier attempt by w1 may have reached the provider", segments: nil,
                    providerMessageID: nil, detail: nil, now: t.addingTimeInterval(3))
            }
            let sent = try #require(try await store.message(id: raced))
            #expect(sent.status == .sent)
            #expect(sent.lastError == nil)
            // The copy's verdict is still in the history.
            #expect(sent.events.map(\.status) == [.queued, .sending, .sent, .uncertain])
            #expect(try await store.message(id: alone)?.status == .uncertain)
        }
    }

    @Test(
        "a job id belongs to whoever recorded it first: another producer's recordPending of it is refused and changes nothing",
        arguments: StoreKind.allCases)
    func jobIDOwnership(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            func record(_ job: UUID, _ to: String, producer: String?) async throws -> Bool {
                try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: to, producer: producer, now: Self.base)
            }
            let own = UUID()
            let recorded = try await record(own, "+447700900123", producer: nil)
            let takenOver = try await record(own, "+447700900123", producer: "crm")
            #expect(recorded && takenOver == false)
            let foreign = UUID()
            let first = try await record(foreign, "+447700900124", producer: "crm")
            let again = try await record(foreign, "+447700900124", producer: "crm")
            let other = try await record(foreign, "+447700900124", producer: "erp")
            #expect(first && again, "its own redelivered copy")
            #expect(other == false)
            #expect(try await store.message(id: own)?.producer == nil)
            #expect(try await store.message(id: foreign)?.producer == "crm")
        }
    }

    @Test("recordPendingOnce records a new job id and otherwise answers the row's status, changing nothing", arguments: StoreKind.allCases)
    func recordOnce(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let job = UUID()
            let first = try await store.recordPendingOnce(jobID: job, projectID: "p", type: .apple, destination: "u1", now: Self.base)
            #expect(first == nil)
            let again = try await store.recordPendingOnce(jobID: job, projectID: "p", type: .apple, destination: "u1", now: Self.base)
            #expect(again == .pending)
            try await store.recordDelivery(jobID: job, status: .abandoned, reason: "publish failed", now: Self.base.addingTimeInterval(1))
            let abandoned = try await store.recordPendingOnce(jobID: job, projectID: "p", type: .apple, destination: "u1", now: Self.base)
            #expect(abandoned == .abandoned)
            #expect(try await store.message(id: job)?.status == .abandoned)
        }
    }

    /// The claim checks the producer too, so a job whose id is shared by another producer's row (recorded
    /// first, or by a worker of an older build that did not check) is never sent under that row.
    @Test("a claim is taken only by the producer whose row it is; any other is a producer mismatch", arguments: StoreKind.allCases)
    func claimComparesProducers(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let own = UUID()
            let foreign = UUID()
            try await store.recordPending(jobID: own, projectID: "p", type: .sms, destination: "+447700900123", producer: nil, now: Self.base)
            try await store.recordPending(jobID: foreign, projectID: "p", type: .sms, destination: "+447700900124", producer: "crm", now: Self.base)
            func claim(_ job: UUID, _ to: String, producer: String?) async throws -> DeliveryClaim {
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: to, owner: "w1",
                    description: DeliveryDescription(template: "verification", provider: "http", producer: producer),
                    now: Self.base.addingTimeInterval(1), reclaimInDoubt: false)
            }
            #expect(try await claim(own, "+447700900123", producer: "crm") == .mismatch(field: "producer"))
            #expect(try await claim(foreign, "+447700900124", producer: nil) == .mismatch(field: "producer"))
            #expect(try await claim(foreign, "+447700900124", producer: "erp") == .mismatch(field: "producer"))
            let untouched = try #require(try await store.message(id: foreign))
            #expect(untouched.status == .pending && untouched.attempts == 0 && untouched.producer == "crm")
            #expect(try await claim(own, "+447700900123", producer: nil) == .claimed(attempt: 1))
            #expect(try await claim(foreign, "+447700900124", producer: "crm") == .claimed(attempt: 1))
            #expect(try await store.message(id: own)?.producer == nil)
        }
    }

    @Test("a message keeps what the worker knew, the provider's id and every transition in order", arguments: StoreKind.allCases)
    func history(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let job = UUID()
            let t = Self.base
            try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+447700900123", now: t)
            let description = DeliveryDescription(template: "verification", locale: "de", provider: "http")
            func claim(_ owner: String, _ at: TimeInterval) async throws -> DeliveryClaim {
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+447700900123", owner: owner, description: description,
                    now: t.addingTimeInterval(at), reclaimInDoubt: false)
            }
            #expect(try await claim("w1", 1) == .claimed(attempt: 1))
            try await store.recordDelivery(
                jobID: job, status: .retrying, reason: "HTTP 503", segments: nil, providerMessageID: nil, detail: "attempt 1 failed: HTTP 503",
                now: t.addingTimeInterval(2))
            #expect(try await claim("w2", 3) == .claimed(attempt: 2))
            try await store.recordDelivery(
                jobID: job, status: .throttled, reason: nil, segments: nil, providerMessageID: nil, detail: "parked\tfor\n5s",
                now: t.addingTimeInterval(4))
            #expect(try await claim("w2", 5) == .claimed(attempt: 3))
            try await store.recordDelivery(
                jobID: job, status: .sent, reason: nil, segments: SMSSegments("Your code is 123456"), providerMessageID: "gw-77", detail: nil,
                now: t.addingTimeInterval(6))
            #expect(try await claim("w3", 7) == .finished(.sent))
            try await store.noteDelivery(jobID: job, status: .duplicateSkipped, detail: "copy skipped", now: t.addingTimeInterval(7))

            let message = try #require(try await store.message(id: job))
            #expect(message.id == job)
            #expect(message.project == "p")
            #expect(message.type == .sms)
            #expect(message.destination == "+447700900123")
            #expect(message.maskedDestination == "+44******0123")
            #expect(message.template == "verification")
            #expect(message.locale == "de")
            #expect(message.provider == "http")
            #expect(message.producer == nil, "herald-api's own job")
            #expect(message.providerMessageID == "gw-77")
            #expect(message.status == .sent)
            #expect(message.publicStatus == .sent)
            #expect(message.attempts == 3)
            #expect(message.segments == 1)
            #expect(message.encoding == "GSM-7")
            #expect(message.lastError == nil)
            #expect(message.createdAt == t)
            #expect(message.updatedAt == t.addingTimeInterval(6))
            #expect(
                message.events.map(\.status) == [.queued, .sending, .queued, .sending, .throttled, .sending, .sent, .duplicateSkipped])
            #expect(message.events.map(\.at) == [0, 1, 2, 3, 4, 5, 6, 7].map { t.addingTimeInterval($0) })
            #expect(message.events[1].detail == "attempt 1 by w1")
            #expect(message.events[3].detail == "attempt 2 by w2")
            #expect(message.events[2].detail == "attempt 1 failed: HTTP 503")
            #expect(message.events[4].detail == "parked for 5s", "tabs and line breaks flattened")
            #expect(try await store.message(id: UUID()) == nil)
        }
    }

    @Test(
        "listings: newest first, filtered by destination, status, type, project and age, paged without gaps or repeats", arguments: StoreKind.allCases
    )
    func listings(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            var ids: [UUID] = []
            // Seven SMS to one number a second apart (two share a millisecond: the id breaks the tie),
            // two to another number, one email, one in another project.
            for index in 0..<7 {
                let id = UUID()
                ids.append(id)
                try await store.recordPending(
                    jobID: id, projectID: "p", type: .sms, destination: "+15555550100",
                    now: Self.base.addingTimeInterval(TimeInterval(index == 6 ? 5 : index)))
            }
            for index in 0..<2 {
                try await store.recordPending(
                    jobID: UUID(), projectID: "p", type: .sms, destination: "+15555550199", now: Self.base.addingTimeInterval(TimeInterval(index)))
            }
            let mail = UUID()
            try await store.recordPending(jobID: mail, projectID: "p", type: .email, destination: "a@example.com", now: Self.base)
            try await store.recordPending(jobID: UUID(), projectID: "q", type: .sms, destination: "+15555550100", now: Self.base)
            try await store.recordDelivery(jobID: ids[1], status: .failed, reason: "HTTP 400", now: Self.base.addingTimeInterval(20))
            try await store.recordDelivery(jobID: ids[2], status: .abandoned, reason: "no confirm", now: Self.base.addingTimeInterval(20))

            // Paging through one number of one project, two at a time.
            var seen: [UUID] = []
            var cursor: MessageCursor?
            var pages = 0
            repeat {
                let page = try await store.messages(MessageQuery(to: "+15555550100", project: "p", pageSize: 2, after: cursor))
                seen += page.messages.map(\.id)
                cursor = page.next
                pages += 1
                if let next = page.next { #expect(MessageCursor(token: next.token) == next) }
            } while cursor != nil && pages < 10
            #expect(pages == 4)
            #expect(Set(seen) == Set(ids))
            #expect(seen.count == ids.count, "no row twice")
            let created = try await store.messages(MessageQuery(to: "+15555550100", project: "p", pageSize: 50)).messages.map(\.createdAt)
            #expect(created == created.sorted(by: >), "newest first")

            // Filters.
            #expect(try await store.messages(MessageQuery(to: "+15555550100", pageSize: 50)).messages.count == 8)
            #expect(try await store.messages(MessageQuery(type: .email)).messages.map(\.id) == [mail])
            let failed = try await store.messages(MessageQuery(statuses: MessageStatus.failed.stored)).messages.map(\.id)
            #expect(Set(failed) == [ids[1], ids[2]], "failed covers abandoned")
            #expect(try await store.messages(MessageQuery(statuses: [])).messages.isEmpty)
            let recent = try await store.messages(MessageQuery(project: "p", since: Self.base.addingTimeInterval(4))).messages
            #expect(Set(recent.map(\.id)) == [ids[4], ids[5], ids[6]])
            #expect(try await store.messages(MessageQuery(to: "+1555555010")).messages.isEmpty, "to matches the full destination")
        }
    }

    @Test("the purge removes rows last changed before the cutoff, at most `limit` per call", arguments: StoreKind.allCases)
    func purge(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            var old: [UUID] = []
            for index in 0..<5 {
                let id = UUID()
                old.append(id)
                try await store.recordPending(
                    jobID: id, projectID: "p", type: .sms, destination: "+1", now: Self.base.addingTimeInterval(TimeInterval(index)))
            }
            // Created long ago but changed recently: kept.
            try await store.recordDelivery(jobID: old[0], status: .sent, reason: nil, now: Self.base.addingTimeInterval(100))
            let fresh = UUID()
            try await store.recordPending(jobID: fresh, projectID: "p", type: .sms, destination: "+1", now: Self.base.addingTimeInterval(100))
            let cutoff = Self.base.addingTimeInterval(50)
            #expect(try await store.purgeMessages(updatedBefore: cutoff, limit: 3) == 3)
            #expect(try await store.purgeMessages(updatedBefore: cutoff, limit: 3) == 1)
            #expect(try await store.purgeMessages(updatedBefore: cutoff, limit: 3) == 0)
            #expect(try await store.message(id: old[0]) != nil)
            #expect(try await store.message(id: fresh) != nil)
            for id in old.dropFirst() { #expect(try await store.message(id: id) == nil) }
        }
    }
}

extension MessageLedgerTests {
    /// Every herald-api runs a purge pass a minute; asked by `updated_at_ms` alone, each read the whole
    /// ledger. PostgreSQL gets statistics first (20,000 rows, ANALYZE), so its planner chooses as it
    /// would on a real ledger.
    @Test("a purge pass reads the ledger's oldest rows through deliveries_created, not the whole ledger", arguments: StoreKind.sql)
    func purgeReadsTheCreatedIndex(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, opened in
            let store = try #require(opened as? SQLStore)
            let plan = try await store.run { db -> String in
                guard db.dialect == .postgres else {
                    return try db.query("EXPLAIN QUERY PLAN " + SQLStore.purgeCandidates, [.integer(100), .integer(1000)])
                        .compactMap { $0.last?.string }.joined(separator: "\n")
                }
                try db.query(
                    """
                    INSERT INTO deliveries (job_id, project_id, type, destination, status, attempts, created_at_ms, updated_at_ms)
                    SELECT 'j' || n, 'p', 'sms', '+1', 'delivered', 1, n, n FROM generate_series(1, 20000) AS n
                    """)
                try db.query("ANALYZE deliveries")
                let statement = SQLStore.purgeCandidates.replacingOccurrences(of: "?1", with: "100").replacingOccurrences(of: "?2", with: "1000")
                return try db.query("EXPLAIN " + statement).compactMap { $0.first?.string }.joined(separator: "\n")
            }
            #expect(plan.contains("deliveries_created"), "\(plan)")
        }
    }

    @Test(
        "a receipt that beats the worker's record stays, and so does the first final status; receipts never touch a message that did not go out",
        arguments: StoreKind.allCases)
    func receiptRace(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let job = UUID()
            try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+15555550100", now: Self.base)
            #expect(
                try await store.applyReceipt(jobID: job, delivered: true, providerMessageID: "x", errorCode: nil, now: Self.base)
                    == .notSent(.pending))
            _ = try await store.claimDelivery(
                jobID: job, projectID: "p", type: .sms, destination: "+15555550100", owner: "w1", now: Self.base.addingTimeInterval(1),
                reclaimInDoubt: false)
            #expect(
                try await store.applyReceipt(
                    jobID: job, delivered: true, providerMessageID: "gw-1", errorCode: nil, now: Self.base.addingTimeInterval(2))
                    == .applied(destination: "+15555550100"))
            try await store.recordDelivery(
                jobID: job, status: .sent, reason: nil, segments: SMSSegments("Your code is 123456"), providerMessageID: nil, detail: nil,
                now: Self.base.addingTimeInterval(3))
            let message = try #require(try await store.message(id: job))
            #expect(message.status == .delivered)
            #expect(message.segments == 1, "the outcome's segments are kept")
            #expect(message.providerMessageID == "gw-1")
            #expect(message.events.map(\.status) == [.queued, .sending, .delivered, .sent])

            // The first final status stays: the same receipt again changes nothing, another is an event.
            let later = Self.base.addingTimeInterval(4)
            #expect(
                try await store.applyReceipt(jobID: job, delivered: true, providerMessageID: "gw-1", errorCode: nil, now: later)
                    == .repeated(.delivered))
            #expect(try await store.message(id: job) == message)
            #expect(
                try await store.applyReceipt(jobID: job, delivered: false, providerMessageID: "gw-2", errorCode: "30003", now: later)
                    == .late(final: .delivered))
            let kept = try #require(try await store.message(id: job))
            #expect(kept.status == .delivered && kept.lastError == nil && kept.providerMessageID == "gw-1")
            #expect(kept.events.map(\.status) == [.queued, .sending, .delivered, .sent, .undelivered])
            #expect(kept.events.last?.detail == "late receipt from the provider (error 30003); the message stays delivered")
            #expect(try await store.applyReceipt(jobID: UUID(), delivered: true, providerMessageID: nil, errorCode: nil, now: Self.base) == .unknown)
            let mail = UUID()
            try await store.recordPending(jobID: mail, projectID: "p", type: .email, destination: "a@example.com", now: Self.base)
            #expect(try await store.applyReceipt(jobID: mail, delivered: true, providerMessageID: nil, errorCode: nil, now: Self.base) == .unknown)
        }
    }
}

extension MessageLedgerTests {
    @Test(
        "an uncertain message keeps its job until an operator resolves it, once: sent, or back to queued to be resent", arguments: StoreKind.allCases)
    func resolveUncertain(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let job = UUID()
            try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+15555550100", now: Self.base)
            _ = try await store.claimDelivery(
                jobID: job, projectID: "p", type: .sms, destination: "+15555550100", owner: "w1", now: Self.base, reclaimInDoubt: false)
            #expect(try await store.resolveUncertain(jobID: job, resolution: .sent, decidedBy: "ops", now: Self.base) == false, "not uncertain yet")
            let body = Data(#"{"id":"job"}"#.utf8)
            try await store.keepUncertainJob(jobID: job, body: body)
            try await store.recordDelivery(jobID: job, status: .uncertain, reason: "no answer", now: Self.base.addingTimeInterval(1))
            #expect(try await store.uncertainJob(jobID: job) == body)
            #expect(try await store.resolveUncertain(jobID: job, resolution: .resend, decidedBy: "ops", now: Self.base.addingTimeInterval(2)))
            #expect(
                try await store.resolveUncertain(jobID: job, resolution: .resend, decidedBy: "ops", now: Self.base.addingTimeInterval(3)) == false)
            #expect(try await store.uncertainJob(jobID: job) == nil, "the kept job is dropped")
            let message = try #require(try await store.message(id: job))
            #expect(message.status == .pending)
            #expect(message.lastError == nil)
            #expect(message.events.last?.detail == "resolved by ops: sent again, once")
            #expect(
                try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+15555550100", owner: "w2", now: Self.base, reclaimInDoubt: false)
                    == .claimed(attempt: 2), "the resent job is claimed again")

            let other = UUID()
            try await store.recordPending(jobID: other, projectID: "p", type: .sms, destination: "+15555550100", now: Self.base)
            // Uncertain only follows a claim (`uncertainOnlyOverSending`).
            _ = try await store.claimDelivery(
                jobID: other, projectID: "p", type: .sms, destination: "+15555550100", owner: "w1", now: Self.base, reclaimInDoubt: false)
            try await store.recordDelivery(jobID: other, status: .uncertain, reason: "no answer", now: Self.base)
            #expect(try await store.resolveUncertain(jobID: other, resolution: .sent, decidedBy: "ops", now: Self.base.addingTimeInterval(1)))
            #expect(try await store.message(id: other)?.status == .sent)
            #expect(try await store.uncertainJob(jobID: other) == nil)
        }
    }

    @Test(
        "per-segment receipts: delivered once every recorded segment is, undelivered at the first that is not; a fraud block marks it failed",
        arguments: StoreKind.allCases)
    func segmentReceipts(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            func sent(segments text: String) async throws -> UUID {
                let job = UUID()
                try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+447700900123", now: Self.base)
                _ = try await store.claimDelivery(
                    jobID: job, projectID: "p", type: .sms, destination: "+447700900123", owner: "w1", now: Self.base, reclaimInDoubt: false)
                try await store.recordDelivery(
                    jobID: job, status: .sent, reason: nil, segments: SMSSegments(text), providerMessageID: "seg-a", detail: nil, now: Self.base)
                return job
            }
            let long = String(repeating: "x", count: 400)
            #expect(SMSSegments(long).segments == 3)
            let job = try await sent(segments: long)
            func receipt(_ status: DeliveryStatus, _ segment: String, code: String? = nil) async throws -> ReceiptResult {
                try await store.applyReceipt(
                    jobID: job, status: status, segment: segment, providerMessageID: segment, errorCode: code, now: Self.base)
            }
            #expect(try await receipt(.delivered, "seg-a") == .partial(delivered: 1, of: 3))
            #expect(try await receipt(.delivered, "seg-a") == .partial(delivered: 1, of: 3), "the same segment again counts once")
            #expect(try await receipt(.delivered, "seg-b") == .partial(delivered: 2, of: 3))
            #expect(try await store.message(id: job)?.status == .sent)
            #expect(try await receipt(.delivered, "seg-c") == .applied(destination: "+447700900123"))
            #expect(try await store.message(id: job)?.status == .delivered)

            let other = try await sent(segments: long)
            #expect(
                try await store.applyReceipt(jobID: other, status: .delivered, segment: "s1", providerMessageID: nil, errorCode: nil, now: Self.base)
                    == .partial(delivered: 1, of: 3))
            #expect(
                try await store.applyReceipt(
                    jobID: other, status: .undelivered, segment: "s2", providerMessageID: nil, errorCode: "7", now: Self.base)
                    == .applied(destination: "+447700900123"))
            #expect(try await store.message(id: other)?.status == .undelivered)

            let blocked = try await sent(segments: "Your code is 123456")
            #expect(
                try await store.applyReceipt(
                    jobID: blocked, status: .failed, segment: nil, providerMessageID: nil, errorCode: "30450", now: Self.base)
                    == .applied(destination: "+447700900123"))
            let record = try #require(try await store.message(id: blocked))
            #expect(record.status == .failed && record.lastError == "blocked by the provider's fraud defence (error 30450)")
            #expect(record.events.last?.detail == "receipt from the provider: fraud block (error 30450); not sent elsewhere")
        }
    }
}

/// The claim's event line is written by the UPDATE around the attempt number only it knows.
@Suite("Claim event line")
struct ClaimEventLineTests {
    @Test("head + attempt + tail is the event line of that attempt, for any owner (a '#' in it included)")
    func aroundTheAttempt() {
        let now = Date(timeIntervalSince1970: 1_790_000_000.123)
        for owner in ["w1", "w#2", "host:1234 #7#", "tab\there\nand", String(repeating: "long-owner ", count: 40), "ünïcødé 🙂"] {
            let (head, tail) = SQLStore.claimEvent(owner: owner, now: now)
            for attempt in 1...9 {
                #expect(head + "\(attempt)" + tail == MessageEvent(status: .sending, at: now, detail: "attempt \(attempt) by \(owner)").storedLine)
            }
        }
    }
}
