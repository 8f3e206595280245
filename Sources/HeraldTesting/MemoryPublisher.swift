import Foundation
import HeraldCore
import Synchronization

/// A `JobPublisher` that keeps what it is given, for in-process API tests without a broker: every job
/// the API published, in order, and a switch that makes publishing fail as a lost confirm does.
public final class MemoryPublisher: JobPublisher {
    /// What publishing throws while `failing` is on.
    public struct Unconfirmed: Error, CustomStringConvertible {
        public var description: String { "the broker did not confirm (MemoryPublisher failing)" }
    }

    private let state = Mutex<(jobs: [Job], failing: Bool)>(([], false))

    public init() {}

    public func publish(_ job: Job, traceparent: TraceParent) async throws {
        try state.withLock { state in
            if state.failing { throw Unconfirmed() }
            state.jobs.append(job)
        }
    }

    /// Every job published so far, oldest first.
    public var jobs: [Job] { state.withLock { $0.jobs } }

    /// Jobs of one type.
    public func jobs(_ type: JobType) -> [Job] { jobs.filter { $0.type == type } }

    /// While on, every publish fails (the API must answer 503 and spend nothing).
    public func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }
}
