import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Testing

@testable import HeraldStore

@Suite("PostgreSQL's hot-path routines", .timeLimit(.minutes(1)))
struct PostgresRoutinesTests {
    /// A plan PL/pgSQL cached while a table was small must not go on scanning it once it is large (see
    /// `PostgresRoutines`): every routine carries `enable_seqscan = off` in the database itself.
    @Test("every routine is stored with enable_seqscan = off, so a plan cached on a small table never scans a large one")
    func noSequentialScans() async throws {
        let (store, url, _) = try await Self.freshStore(migrate: true)
        let rows = try await store.run { db in
            try db.query(
                """
                SELECT p.proname, array_to_string(p.proconfig, ',') FROM pg_proc p
                WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'herald\\_%' ORDER BY p.proname
                """)
        }
        await store.close()
        await TestStore.dropSchema(of: url)
        let settings = Dictionary(uniqueKeysWithValues: rows.compactMap { row in row.first?.string.map { ($0, row[1].string ?? "") } })
        #expect(settings.keys.sorted() == ["herald_admit_send_v1", "herald_batch_v8", "herald_refund_v1"])
        for (name, setting) in settings {
            #expect(setting.contains("enable_seqscan=off"), "\(name): \(setting)")
        }
    }

    /// The batch call is a prepared statement (`PostgresBackend.prepared`), and postgres-nio remembers a
    /// failed preparation for the connection's life: without closing that connection, a process that
    /// once called before its routines existed would fail every later batch on it.
    @Test("a batch call that failed before the routines existed does not fail the next on the same connection")
    func failedPreparationIsForgotten() async throws {
        let (store, url, schema) = try await Self.freshStore(migrate: false)
        func record() async throws {
            try await store.recordDelivery(
                jobID: UUID(), status: .sent, reason: nil, segments: nil, providerMessageID: nil, detail: nil, now: Date())
        }
        await #expect(throws: StoreError.self) { try await record() }
        try await store.migrate(schema: schema)
        try await record()
        await store.close()
        await TestStore.dropSchema(of: url)
    }

    @Test("in one batch that names a job twice (the routine's loop), an uncertain after the outcome leaves the outcome")
    func uncertainAfterOutcomeInOneBatch() async throws {
        let (store, url, _) = try await Self.freshStore(migrate: true)
        let job = UUID()
        let now = Date()
        try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+447700900123", now: now)
        _ = try await store.claimDelivery(
            jobID: job, projectID: "p", type: .sms, destination: "+447700900123", owner: "w1",
            description: DeliveryDescription(template: nil, locale: nil, provider: nil, producer: nil), now: now, reclaimInDoubt: false)
        let batch = PostgresBatcher.body([
            .record(jobID: job, status: .sent, reason: nil, segments: nil, providerMessageID: nil, event: "", now: now),
            .record(jobID: job, status: .uncertain, reason: "in doubt", segments: nil, providerMessageID: nil, event: "", now: now),
        ])
        let rows = try await store.backend.statement("SELECT idx, verdict FROM herald_batch_v8(?::jsonb)", [.text(batch)])
        #expect(rows.map { $0[1].string } == ["done", "done"])
        #expect(try await store.deliveryStatus(jobID: job)?.status == .sent)
        await store.close()
        await TestStore.dropSchema(of: url)
    }

    /// v7 decides a batch's admissions on the limit and velocity rows it read once, and writes each row
    /// once at the end (`PostgresRoutines.batch`). Batches of 1 to 12 admissions, in an order fixed here
    /// (group commit would pick its own), must answer as the memory model deciding the same sends one by
    /// one: refusals with their TAT and Retry-After, pumping trips, blocks, a key listed twice, sends
    /// sharing every key with the rest of their batch; and leave every key with the allowance the model
    /// leaves it.
    @Test("many admissions in one batch answer, and leave the limits, as the memory model deciding them one by one")
    func batchedAdmissionsMatchModel() async throws {
        let (store, url, _) = try await Self.freshStore(migrate: true)
        let model = MemoryStore()
        var generator = SplitMix64(seed: 29)
        let settings = PrefixVelocity.Settings(enabled: true, window: .seconds(10), multiple: 3, minimumSends: 9, blockFor: .seconds(20))
        let phones = try ["+15555550100", "+15555550101", "+15555550102", "+4479460000", "+4479460001"].map { try PhoneNumber(parsing: $0) }
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        var seen: Set<String> = []
        var largest = 0
        var step = 0
        // Every key's allowance as the model leaves it, after each batch (a refund may leave a TAT at the
        // refused send's time where the model left an older one: the same state to GCRA from then on,
        // so allowances are compared, not raw TATs).
        let keys =
            [(LimitKind.project, "p", "30/10s"), (.country, "US", "12/10s burst 8"), (.country, "GB", "12/10s burst 8")]
            + phones.map { (LimitKind.number, $0.e164, "3/10s burst 2") } + (1...3).map { (LimitKind.ip, "203.0.113.\($0)", "9/10s") }
        func expectSameAllowances(at time: Date, _ comment: Comment) async throws {
            for (kind, subject, policy) in keys {
                let parameters = GCRA.Parameters(RatePolicy.parse(policy)!)
                let stored = try await store.rateStates(kind: kind.rawValue, subject: subject, project: "p").first?.tat
                let modelled = try await model.rateStates(kind: kind.rawValue, subject: subject, project: "p").first?.tat
                let at = time.microsecondsSince1970
                #expect(
                    GCRA.remaining(tat: stored, now: at, parameters: parameters) == GCRA.remaining(tat: modelled, now: at, parameters: parameters),
                    "\(kind) \(subject), \(comment)")
            }
        }
        while step < 400 {
            var batch: [SendAdmission] = []
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                // Sends of one batch mostly share a time, as concurrent requests do; some move it on.
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    now = now.addingTimeInterval(Double(Int.random(in: 0...900, using: &generator)) / 1000)
                }
                let phone = phones.randomElement(using: &generator)!
                var limits = [
                    LimitCheck(kind: .number, scope: "p", subject: phone.e164, policy: RatePolicy.parse("3/10s burst 2")!),
                    LimitCheck(kind: .project, scope: "p", subject: "p", policy: RatePolicy.parse("30/10s")!),
                    LimitCheck(kind: .country, scope: "p", subject: phone.region, policy: RatePolicy.parse("12/10s burst 8")!),
                    LimitCheck(
                        kind: .ip, scope: "p", subject: "203.0.113.\(Int.random(in: 1...3, using: &generator))", policy: RatePolicy.parse("9/10s")!),
                ]
                if Int.random(in: 0..<10, using: &generator) == 0 { limits.append(limits[0]) }
                let session = VerificationSession(
                    id: "s\(step)", projectID: "p", phoneNumber: phone.e164, region: phone.region, codeHash: Data([1]), createdAt: now,
                    expiresAt: now.addingTimeInterval(300), maxAttempts: 5, jobID: UUID())
                batch.append(SendAdmission(session: session, prefix: phone.prefix(digits: 6), limits: limits, pumping: settings, now: now))
                step += 1
            }
            let rows = try await store.backend.statement(
                "SELECT idx, verdict, n1, n2, n3, n4, n5, note FROM herald_batch_v8(?::jsonb)",
                [.text(PostgresBatcher.body(batch.map { .admit($0) }))])
            #expect(rows.count == batch.count)
            // The rows come in no particular order; the model decides in batch order.
            let answers = Dictionary(uniqueKeysWithValues: rows.compactMap { row in row[0].int.map { (Int($0), Array(row.dropFirst())) } })
            for (index, send) in batch.enumerated() {
                let expected = try await model.admitSend(send)
                let row = try #require(answers[index], "no answer for \(send.session.id)")
                #expect(try SQLStore.admissionVerdict(row, of: send) == expected, "\(send.session.id), \(index + 1) of a batch of \(batch.count)")
                seen.insert("\(expected)".prefix { $0 != "(" }.description)
                // The admitted, and only they, have their pending ledger row.
                let recorded = try await store.deliveryStatus(jobID: send.session.jobID!) != nil
                #expect(recorded == (expected == .admitted), "\(send.session.id)")
            }
            largest = max(largest, batch.count)
            try await expectSameAllowances(at: now, "after the batch ending with s\(step - 1)")
        }
        // Every admitted send's session, and no other.
        let stored = Set(try await store.openSessions(projectID: "p", now: now).map(\.id))
        let modelled = Set(try await model.openSessions(projectID: "p", now: now).map(\.id))
        #expect(stored == modelled)
        #expect(stored.isEmpty == false)
        // Worth something only if batches were large and went through every verdict.
        #expect(largest >= 10)
        #expect(seen == ["admitted", "refused", "tripped", "blocked"])
        await store.close()
        await TestStore.dropSchema(of: url)
    }

    /// A store on a fresh schema of the suite's PostgreSQL, with one connection: every call runs on it (or on
    /// the pool's replacement of it). A long wait for the connection, as StoreFixture's: under the whole
    /// suite one took over 5 s.
    static func freshStore(migrate: Bool) async throws -> (store: SQLStore, url: String, schema: String?) {
        let url = try #require(try TestStore.postgres.freshURL())
        let location = try StoreLocation(parsing: url)
        guard case .postgres(let postgres) = location else { throw TestFailure("not a PostgreSQL URL: \(url)") }
        let store = try await SQLStore.open(
            StoreSettings(url: url, location: location, poolSize: 1, connectTimeout: .seconds(60)), migrate: migrate,
            logger: Logger(label: "test"))
        return (store, url, postgres.schema)
    }
}

@Suite("Placeholders rewritten for PostgreSQL")
struct PlaceholderRewriteTests {
    /// A routine's comment with one apostrophe must not open a literal that runs to the next quote, or
    /// the jsonpath `?` after it is rewritten as `$1` and the routine fails to parse.
    @Test("? and ?N become $N outside literals and comments; an apostrophe in a comment opens no literal")
    func rewrite() {
        #expect(PlaceholderCache.rewrite("SELECT ?, ?3, '?' FROM t WHERE a = ?") == "SELECT $1, $3, '?' FROM t WHERE a = $2")
        #expect(
            PlaceholderCache.rewrite("SELECT ? -- the batch's rows, ?\nFROM t WHERE jsonb_path_exists(p, '$[*] ? (@.op == \"x\")') AND b = ?")
                == "SELECT $1 -- the batch's rows, ?\nFROM t WHERE jsonb_path_exists(p, '$[*] ? (@.op == \"x\")') AND b = $2")
        #expect(PlaceholderCache.rewrite("SELECT 1 - -1, ?") == "SELECT 1 - -1, $1")
    }
}

/// `scripts/pg-batch-bench.sh`, the routine-level benchmark docs/performance.md points to: it must keep calling
/// the routine the migration installs with operations it accepts, or its figures would stop meaning
/// anything without anyone noticing.
@Suite("The PostgreSQL routine benchmark script", .timeLimit(.minutes(1)))
struct PostgresBatchBenchScriptTests {
    @Test("one second of admissions, claims and outcomes: a time per call for each, and its schema dropped after")
    func runsAndCleansUp() async throws {
        _ = try TestStore.postgresURL()  // no PostgreSQL: a failure, not a skip
        let script = TestConfiguration.repositoryRoot.appendingPathComponent("scripts/pg-batch-bench.sh").path
        // The server's URL reaches the script from the environment (make test exports it; by hand the
        // script asks scripts/postgres.sh), so its password is not in the command a failure prints.
        let output = try await shell(
            #"PG_URL="${HERALDTEST_POSTGRES_URL%%\?*}" PG_BENCH_ADMIN="# + shellQuoted(HeraldProcess.binDirectory + "/herald-admin") + " "
                + shellQuoted(script) + " 1 4 1")
        let calls = output.split(separator: "\n").filter { $0.contains("ms per call") }
        #expect(calls.count == 3, "\(output)")
        for kind in ["bench_admits", "bench_claims", "bench_outcomes"] {
            #expect(calls.contains { $0.contains(kind) && $0.contains("herald_batch_v") }, "\(kind): \(output)")
        }
        let (store, schemaURL, _) = try await PostgresRoutinesTests.freshStore(migrate: false)
        let left = try await store.run { db in
            try db.query("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgbench\\_%'").first?.first?.int ?? -1
        }
        #expect(left == 0)
        await store.close()
        await TestStore.dropSchema(of: schemaURL)
    }
}
