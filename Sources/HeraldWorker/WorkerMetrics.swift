import Metrics
import Synchronization

/// A worker's per-job metric handles, made once. Making a handle goes through the metrics factory
/// (a registry lookup by name and labels, under its lock, and an allocation); five per sent job were
/// 2 % of an SMS worker's CPU. Handles whose labels vary (outcome, country) are kept by their labels:
/// few distinct values, each made on first use.
final class WorkerMetrics: Sendable {
    let type: String
    /// How long a fresh job waited in the queue.
    let queueWait: Timer
    /// How long the provider call took.
    let providerCall: Timer
    /// From the job's creation to the provider's acceptance.
    let enqueueToSent: Timer
    private let jobs = Mutex<[String: Counter]>([:])
    private let segments = Mutex<[String: Counter]>([:])
    private let cost = Mutex<[String: FloatingPointCounter]>([:])

    init(type: String) {
        self.type = type
        queueWait = Timer(label: "herald_worker_queue_wait_seconds", dimensions: [("type", type)])
        providerCall = Timer(label: "herald_worker_provider_seconds", dimensions: [("type", type)])
        enqueueToSent = Timer(label: "herald_worker_enqueue_to_sent_seconds", dimensions: [("type", type)])
    }

    /// `herald_worker_jobs_total{type, outcome}`.
    func job(_ outcome: String) -> Counter {
        jobs.withLock { made in
            if let counter = made[outcome] { return counter }
            let counter = Counter(label: "herald_worker_jobs_total", dimensions: [("type", type), ("outcome", outcome)])
            made[outcome] = counter
            return counter
        }
    }

    /// `herald_sms_segments_total{country, encoding}`.
    func segments(country: String, encoding: String) -> Counter {
        segments.withLock { made in
            let key = country + "\u{0}" + encoding
            if let counter = made[key] { return counter }
            let counter = Counter(label: "herald_sms_segments_total", dimensions: [("country", country), ("encoding", encoding)])
            made[key] = counter
            return counter
        }
    }

    /// `herald_sms_cost_total{country, currency}`.
    func cost(country: String, currency: String) -> FloatingPointCounter {
        cost.withLock { made in
            let key = country + "\u{0}" + currency
            if let counter = made[key] { return counter }
            let counter = FloatingPointCounter(label: "herald_sms_cost_total", dimensions: [("country", country), ("currency", currency)])
            made[key] = counter
            return counter
        }
    }
}
