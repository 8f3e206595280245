/// `workers.<type>`.
public struct WorkerSettings: Sendable {
    /// Jobs processed at once by one process.
    public var concurrency: Int
    /// Unacknowledged deliveries on this worker's consumer (`workers.<type>.prefetch`, else
    /// `amqp.prefetch`). A process works on min(concurrency, prefetch) jobs at once.
    public var prefetch: Int
    /// Delay queues, shortest first; one retry per entry.
    public var retryDelays: [Duration]
    /// Delay queues for throttled jobs (per-number spacing waits longer than `throttleHold`), shortest first.
    public var throttleDelays: [Duration]
    /// Throttle waits up to this long are held in memory (no republish, order kept); longer ones park
    /// the job in a throttle queue. Provider-rate waits are always held (in arrival order).
    public var throttleHold: Duration
    /// Port of `/healthz`, `/readyz`, `/metrics` (0 = any free port).
    public var metricsPort: Int
    /// On SIGTERM, how long in-flight jobs may take before they are handed back to the broker.
    public var shutdownGrace: Duration
    /// Resend when a previous attempt may have reached the provider (risks a duplicate).
    public var retryUncertain: Bool
    /// How often the worker reads its queues' depth and consumers for `/metrics` (zero: never).
    public var queuePollInterval: Duration
    /// A consumer that holds unacknowledged deliveries while its queue's oldest job has waited this long
    /// is flagged on the status page (a stopped or stuck worker keeps what it prefetched).
    public var stuckAfter: Duration = .seconds(60)

    public init(
        concurrency: Int, prefetch: Int, retryDelays: [Duration], throttleDelays: [Duration], throttleHold: Duration, metricsPort: Int,
        shutdownGrace: Duration, retryUncertain: Bool, queuePollInterval: Duration, stuckAfter: Duration = .seconds(60)
    ) {
        self.concurrency = concurrency
        self.prefetch = prefetch
        self.retryDelays = retryDelays
        self.throttleDelays = throttleDelays
        self.throttleHold = throttleHold
        self.metricsPort = metricsPort
        self.shutdownGrace = shutdownGrace
        self.retryUncertain = retryUncertain
        self.queuePollInterval = queuePollInterval
        self.stuckAfter = stuckAfter
    }
}
