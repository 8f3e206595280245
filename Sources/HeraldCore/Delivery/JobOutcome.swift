/// What became of one delivery of a job: the `outcome` label of `herald_worker_jobs_total`
/// (`deploy/monitoring` alerts on some of them, so a raw value never changes).
public enum JobOutcome: String, Sendable, CaseIterable {
    /// The provider accepted it.
    case sent
    /// Retried through a delay queue.
    case retry
    /// Parked in a throttle queue by per-number spacing.
    case throttled
    /// Its code expired first; dropped.
    case expired
    /// A copy of a job the ledger already finished; skipped.
    case duplicate
    /// It may have reached the provider; not resent.
    case uncertain
    /// Refused for good by the provider, or retries ran out: dead-lettered.
    case failed
    /// Its signature, producer or ledger row did not check out: dead-lettered.
    case unauthenticated
    /// Its schema, body or type could not be read: dead-lettered.
    case malformed
    /// A foreign producer's job its policy does not allow: dead-lettered.
    case refused
    /// The store could not be reached; requeued.
    case storeError = "store_error"
    /// A republish the broker did not confirm, for a dead letter: rejected to the broker's own.
    case rejected
    /// A republish the broker did not confirm, for anything else: back to the work queue.
    case requeued
}
