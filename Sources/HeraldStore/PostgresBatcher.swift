import Foundation
import HeraldCore
import Metrics
import PostgresNIO
import Synchronization

/// Group commit for PostgreSQL's hot paths: send admissions and the worker's claims and outcomes
/// that arrive while a batch is in flight wait, then go together as one `herald_batch_v8` call (one
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
                    waiting.continuation.resume(throwing: StoreError(.failed, "herald_batch_v8 left an operation unanswered"))
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
        static let name = "herald_batch_v8"
        static let sql = "SELECT idx, verdict, n1, n2, n3, n4, n5, note FROM herald_batch_v8($1::jsonb)"
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

    /// The batch as the function's JSON argument: objects written member by member, in key order.
    /// Built as a tree of `JSONWriter.Value`s first (a list of some twenty-five members per admission,
    /// checked for order, written, then freed), it was about 35,000 instructions per send on PostgreSQL;
    /// written member by member into an array, 29,600; into the writer's own buffer with literal keys
    /// and the limits' rows written in place, 18,300.
    static func body(_ operations: [Operation]) -> String {
        var writer = JSONWriter(capacity: 700 * operations.count)
        writer.beginList()
        for operation in operations {
            writer.element()
            writer.beginObject()
            switch operation {
            case .claim(let jobID, let project, let type, let destination, let owner, let description, let now, let reclaim):
                let event = SQLStore.claimEvent(owner: owner, now: now)
                writer.member("eventHead", .string(event.head))
                writer.member("eventTail", .string(event.tail))
                writer.member("jobId", .string(jobID.lowercasedText))
                writer.member("locale", description.locale.map { .string($0) })
                writer.member("nowMs", .integer(now.millisecondsSince1970))
                writer.member("op", .string("claim"))
                writer.member("owner", .string(owner))
                writer.member("producer", description.producer.map { .string($0) })
                writer.member("project", .string(project))
                writer.member("provider", description.provider.map { .string($0) })
                writer.member("reclaim", .string(reclaim ? "true" : "false"))
                writer.member("template", description.template.map { .string($0) })
                writer.member("to", .string(destination))
                writer.member("type", .string(type.rawValue))
            case .record(let jobID, let status, let reason, let segments, let providerMessageID, let event, let now):
                writer.member("encoding", segments.map { .string($0.encoding.rawValue) })
                writer.member("event", .string(event))
                writer.member("jobId", .string(jobID.lowercasedText))
                writer.member("nowMs", .integer(now.millisecondsSince1970))
                writer.member("op", .string("record"))
                writer.member("providerMessageId", providerMessageID.map { .string($0) })
                writer.member("reason", reason.map { .string($0) })
                writer.member("segments", segments.map { .integer(Int64($0.segments)) })
                writer.member("status", .string(status.rawValue))
            case .admit(let send):
                let session = send.session
                let pumping = send.pumping
                writer.member("blockUs", pumping.map { .integer($0.blockFor.microseconds) })
                writer.member("clientKey", session.clientKey.map { .string($0) })
                writer.member("codeHash", .string(SHA256Hex.hex(session.codeHash)))
                writer.member("codeSealed", session.codeSealed.map { .string($0) })
                writer.member("createdMs", .integer(session.createdAt.millisecondsSince1970))
                writer.member("credentialHash", session.credentialHash.map { .string($0) })
                writer.member("expiresMs", .integer(session.expiresAt.millisecondsSince1970))
                writer.member("firstFactorOnly", send.refuseSecondFactorHolders ? .string("true") : nil)
                writer.member("id", .string(session.id))
                writer.member("infoSealed", session.sessionInfoSealed.map { .string($0) })
                writer.member("jobId", session.jobID.map { .string($0.lowercasedText) })
                // [[key, interval, tolerance], …], written as it is read: no list of values built for it.
                writer.beginMember("limits")
                writer.beginList()
                for entry in send.rateEntries {
                    writer.element()
                    writer.beginList()
                    writer.element(.string(entry.key))
                    writer.element(.integer(entry.parameters.interval))
                    writer.element(.integer(entry.parameters.tolerance))
                    writer.endList()
                }
                writer.endList()
                writer.member("maxAttempts", .integer(Int64(session.maxAttempts)))
                writer.member("minSends", pumping.map { .integer(Int64($0.minimumSends)) })
                writer.member("multiple", pumping.map { .real($0.multiple) })
                writer.member("nowUs", .integer(send.now.microsecondsSince1970))
                writer.member("op", .string("admit"))
                writer.member("phone", .string(session.phoneNumber))
                writer.member("prefix", .string(send.prefix))
                writer.member("project", .string(session.projectID))
                writer.member("purpose", .string(session.purpose.description))
                writer.member("region", .string(session.region))
                writer.member("smoothing", pumping.map { .real($0.smoothing) })
                writer.member("windowText", pumping.map { .string(DurationText.format($0.window)) })
                writer.member("windowUs", pumping.map { .integer($0.window.microseconds) })
            }
            writer.endObject()
        }
        writer.endList()
        return writer.text
    }
}
