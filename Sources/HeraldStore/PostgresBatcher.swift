import Foundation
import HeraldCore
import Metrics
import PostgresNIO
import Synchronization

/// Group commit for PostgreSQL's hot paths: send admissions and the worker's claims and outcomes
/// that arrive while a batch is in flight wait, then go together as one `herald_batch_v7` call (one
/// transaction, one round trip). Each caller is answered with its own row once the batch committed.
///
/// One batch in flight per process: every send locks the same few rows (project, country, client IP
/// limits) until commit, so two batches of one process could only queue behind each other.
final class PostgresBatcher: Sendable {
    enum Operation: Sendable {
        case admit(SendAdmission)
        case claim(
            jobID: UUID, projectID: String, type: JobType, destination: String, owner: String, description: DeliveryDescription, now: Date,
            reclaimInDoubt: Bool)
        /// `event`: the line appended to the row's events (`MessageEvent.storedLine`).
        case record(
            jobID: UUID, status: DeliveryStatus, reason: String?, segments: SMSSegments?, providerMessageID: String?, event: String, now: Date)
    }

    /// One row of the batch's answer.
    struct Answer: Sendable {
        var row: [SQLValue]
    }

    private typealias Waiting = Coalescer<Operation, Answer>.Waiting

    private let backend: PostgresBackend
    private let queue: Coalescer<Operation, Answer>
    /// Batches in flight at once. Two were measured at half the throughput of one: the second batch
    /// only waits on the first's row locks, and batches sharing a number can deadlock and retry.
    static let inFlight = 1
    private let batchSizes = Recorder(label: "herald_store_batch_size", dimensions: [("store", "postgres")])
    /// How long a batch holds the one slot (its round trip and commit): with the batches per second, how
    /// busy group commit is, that is whether callers queue behind it.
    private let batchTimes = Timer(label: "herald_store_batch_seconds", dimensions: [("store", "postgres")])
    /// Beyond this many operations a batch is cut (one call's JSON stays small; the rest go next).
    static let maximumBatch = 256

    init(backend: PostgresBackend) {
        self.backend = backend
        // The batches run on the client's event loop (`EventLoopTaskExecutor`).
        self.queue = Coalescer(inFlight: Self.inFlight, maximumBatch: Self.maximumBatch, executor: backend.executor)
    }

    func submit(_ operation: Operation) async throws -> Answer {
        try await queue.submit(operation) { batch in
            self.batchSizes.record(batch.count)
            let started = ContinuousClock.now
            await self.run(batch)
            self.batchTimes.record(duration: ContinuousClock.now - started)
        }
    }

    /// Runs `batch` as one call. A duplicate key fails the whole call (the function has no savepoint
    /// per operation, see `PostgresRoutines.batch`); then every operation runs alone, so the error
    /// reaches only the one that caused it.
    private func run(_ batch: [Waiting]) async {
        do {
            let rows = try await backend.prepared(Call(operations: Self.body(batch.map(\.item))))
            var answers = [Answer?](repeating: nil, count: batch.count)
            for row in rows {
                if let index = row.first?.int, answers.indices.contains(Int(index)) { answers[Int(index)] = Answer(row: Array(row.dropFirst())) }
            }
            for (waiting, answer) in zip(batch, answers) {
                if let answer {
                    waiting.continuation.resume(returning: answer)
                } else {
                    waiting.continuation.resume(throwing: StoreError(.failed, "herald_batch_v7 left an operation unanswered"))
                }
            }
        } catch let error as StoreError where batch.count > 1 && error.isUnique {
            for waiting in batch { await run([waiting]) }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    /// The routine's call, prepared once per connection (`PostgresBackend.prepared`). The operations go as
    /// text and are cast in the statement: a parameter typed jsonb would expect jsonb's binary form.
    struct Call: PostgresPreparedStatement {
        static let name = "herald_batch_v7"
        static let sql = "SELECT idx, verdict, n1, n2, n3, n4, n5, note FROM herald_batch_v7($1::jsonb)"
        static let bindingDataTypes: [PostgresDataType] = [.text]
        typealias Row = [SQLValue]

        let operations: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(operations)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> [SQLValue] { try row.map(PostgresSQLConnection.value) }
    }

    /// The batch as the function's JSON argument.
    static func body(_ operations: [Operation]) -> String {
        var writer = JSONWriter(capacity: 700 * operations.count)
        writer.list(
            operations.map { operation -> JSONWriter.Value in
                switch operation {
                case .claim(let jobID, let project, let type, let destination, let owner, let description, let now, let reclaim):
                    let event = SQLStore.claimEvent(owner: owner, now: now)
                    // Fields in key order, here and below: the writer then writes them without sorting.
                    return .fields([
                        ("eventHead", .string(event.head)), ("eventTail", .string(event.tail)), ("jobId", .string(jobID.lowercasedText)),
                        ("locale", description.locale.map { .string($0) }), ("nowMs", .integer(now.millisecondsSince1970)),
                        ("op", .string("claim")), ("owner", .string(owner)), ("producer", description.producer.map { .string($0) }),
                        ("project", .string(project)), ("provider", description.provider.map { .string($0) }),
                        ("reclaim", .string(reclaim ? "true" : "false")), ("template", description.template.map { .string($0) }),
                        ("to", .string(destination)), ("type", .string(type.rawValue)),
                    ])
                case .record(let jobID, let status, let reason, let segments, let providerMessageID, let event, let now):
                    return .fields([
                        ("encoding", segments.map { .string($0.encoding.rawValue) }), ("event", .string(event)),
                        ("jobId", .string(jobID.lowercasedText)), ("nowMs", .integer(now.millisecondsSince1970)), ("op", .string("record")),
                        ("providerMessageId", providerMessageID.map { .string($0) }), ("reason", reason.map { .string($0) }),
                        ("segments", segments.map { .integer(Int64($0.segments)) }), ("status", .string(status.rawValue)),
                    ])
                case .admit(let send):
                    let session = send.session
                    let pumping = send.pumping
                    return .fields([
                        ("blockUs", pumping.map { .integer($0.blockFor.microseconds) }), ("clientKey", session.clientKey.map { .string($0) }),
                        ("codeHash", .string(SHA256Hex.hex(session.codeHash))), ("codeSealed", session.codeSealed.map { .string($0) }),
                        ("createdMs", .integer(session.createdAt.millisecondsSince1970)),
                        ("credentialHash", session.credentialHash.map { .string($0) }),
                        ("expiresMs", .integer(session.expiresAt.millisecondsSince1970)),
                        ("firstFactorOnly", send.refuseSecondFactorHolders ? .string("true") : nil), ("id", .string(session.id)),
                        ("infoSealed", session.sessionInfoSealed.map { .string($0) }), ("jobId", session.jobID.map { .string($0.lowercasedText) }),
                        (
                            "limits",
                            .array(
                                send.rateEntries.map {
                                    .array([.string($0.key), .integer($0.parameters.interval), .integer($0.parameters.tolerance)])
                                })
                        ),
                        ("maxAttempts", .integer(Int64(session.maxAttempts))), ("minSends", pumping.map { .integer(Int64($0.minimumSends)) }),
                        ("multiple", pumping.map { .real($0.multiple) }), ("nowUs", .integer(send.now.microsecondsSince1970)),
                        ("op", .string("admit")), ("phone", .string(session.phoneNumber)), ("prefix", .string(send.prefix)),
                        ("project", .string(session.projectID)), ("purpose", .string(session.purpose.description)),
                        ("region", .string(session.region)), ("smoothing", pumping.map { .real($0.smoothing) }),
                        ("windowText", pumping.map { .string(DurationText.format($0.window)) }),
                        ("windowUs", pumping.map { .integer($0.window.microseconds) }),
                    ])
                }
            })
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
