import Foundation

/// Whether a delivery is a job this worker may act on, decided before `JobLifecycle` starts: its
/// schema, its signature (herald-api's, or a configured producer's), its body, its type, and for a
/// foreign producer's job what `ForeignJobPolicy` and then the store say. Pure: the worker reads the
/// headers and asks the store, this decides.
///
/// A refusal is a `JobLifecycle.Finish` like any other end of a job, so one code path settles,
/// counts and logs every delivery: a job that cannot be trusted or read is dead-lettered at attempt 0
/// with the reason in its headers, and never reaches a provider.
public enum JobAdmission {
    /// What the worker reads of a delivery before trusting it.
    public struct Envelope: Sendable {
        /// `x-herald-schema`, when the header is there.
        public var schema: Int64?
        /// `x-herald-producer`, when present and not empty (at most 64 characters kept).
        public var producer: String?
        /// `x-herald-signature`, when present.
        public var signature: String?
        /// The broker's message id, for logs only.
        public var messageID: String?
        public var body: Data

        public init(schema: Int64?, producer: String?, signature: String?, messageID: String?, body: Data) {
            self.schema = schema
            self.producer = producer
            self.signature = signature
            self.messageID = messageID
            self.body = body
        }
    }

    public enum Verdict: Sendable, Equatable {
        /// Read and authenticated. For a foreign producer's job, `foreignPrefix` is the destination's
        /// prefix: the store must still be asked about blocks on it (`foreign(_:…)`).
        case admitted(Job, origin: ForeignJobPolicy.Origin, foreignPrefix: String?)
        case refused(JobLifecycle.Finish)
    }

    /// The verdict on `envelope` in `queue`'s worker, verifying herald-api's jobs with `own`.
    public static func verdict(_ envelope: Envelope, queue: JobType, policy: ForeignJobPolicy, own: KeyedHMAC) -> Verdict {
        if let schema = envelope.schema, schema != Int64(Job.schemaVersion) {
            return .refused(
                refusal("unsupported x-herald-schema \(schema)", .malformed, Note(.warning, "job of an unsupported schema dead-lettered")))
        }
        // Nothing from the broker is read, let alone sent, before it proves it came from herald-api or a
        // configured producer (`integrations.producers`).
        let origin: ForeignJobPolicy.Origin
        switch policy.authenticate(body: envelope.body, producer: envelope.producer, signature: envelope.signature, own: own) {
        case .success(let verified): origin = verified
        case .failure(let refusal):
            return .refused(
                Self.refusal(
                    refusal.reason, .unauthenticated,
                    Note(
                        .error, "unauthenticated job dead-lettered",
                        ["message.id": LogText.messageID(envelope.messageID), "signed": String(envelope.signature != nil)])))
        }
        let job: Job
        do {
            job = try JobCodec.decode(envelope.body)
        } catch {
            return .refused(
                refusal(
                    "malformed job: \(error.description)", .malformed,
                    Note(.error, "malformed job dead-lettered", ["message.id": LogText.messageID(envelope.messageID), "problem": error.description])))
        }
        guard job.type == queue else {
            return .refused(
                refusal(
                    "a \(job.type.rawValue) job in the \(queue.rawValue) queue", .malformed, Note(.warning, "job in the wrong queue dead-lettered")))
        }
        guard case .producer(let producer) = origin else { return .admitted(job, origin: origin, foreignPrefix: nil) }
        switch policy.admit(job, from: producer) {
        case .success(let prefix): return .admitted(job, origin: origin, foreignPrefix: prefix)
        case .failure(let refusal): return .refused(foreignRefusal(refusal.reason, producer: producer))
        }
    }

    /// The end of a foreign job the policy admitted, once the store answered: nil when it may go on
    /// (its prefix is not blocked and its ledger row was written), else why it is dead-lettered.
    /// `recorded` is false when another producer's job holds the id.
    public static func foreign(_ job: Job, producer: String, prefix: String, block: PrefixBlock?, recorded: Bool) -> JobLifecycle.Finish? {
        if let block {
            return foreignRefusal(
                "blocked: prefix \(prefix) of project '\(job.project)' is blocked until \(Timestamp.format(block.until)) (\(block.reason))",
                producer: producer)
        }
        return recorded ? nil : foreignRefusal("forbidden: job id in use", producer: producer)
    }

    /// The end of a foreign job whose checks the store could not answer: back to the work queue after
    /// a pause (the store is shared, so no other worker would do better at once).
    public static func storeUnavailable(_ error: String) -> JobLifecycle.Finish {
        JobLifecycle.Finish(
            record: nil, settlement: .requeue(after: .seconds(1)), outcome: .storeError,
            note: Note(.error, "cannot check a foreign job in the store; requeueing", ["error": error]))
    }

    typealias Note = JobLifecycle.Note

    static func foreignRefusal(_ reason: String, producer: String) -> JobLifecycle.Finish {
        refusal(reason, .refused, Note(.warning, "foreign job refused", ["producer": producer, "reason": reason]))
    }

    static func refusal(_ reason: String, _ outcome: JobOutcome, _ note: Note) -> JobLifecycle.Finish {
        JobLifecycle.Finish(record: nil, settlement: .deadLetter(reason: reason, attempt: 0), outcome: outcome, note: note)
    }
}
