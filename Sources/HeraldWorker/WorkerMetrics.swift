import HeraldCore
import Metrics

/// A worker's per-job metric handles, made once. Making a handle goes through the metrics factory
/// (a registry lookup by name and labels, under its lock, and an allocation); five per sent job were
/// 2 % of an SMS worker's CPU. Handles whose labels vary (outcome, country) are kept by their labels
/// (`HandleCache`).
final class WorkerMetrics: Sendable {
    let type: String
    /// How long a fresh job waited in the queue.
    let queueWait: Timer
    /// How long the provider call took.
    let providerCall: Timer
    /// From the job's creation to the provider's acceptance.
    let enqueueToSent: Timer
    private let jobs = HandleCache<Counter>()
    private let segments = HandleCache<Counter>()
    private let cost = HandleCache<FloatingPointCounter>()
    private let attempts = HandleCache<Counter>()

    init(type: String) {
        self.type = type
        queueWait = Timer(label: "herald_worker_queue_wait_seconds", dimensions: [("type", type)])
        providerCall = Timer(label: "herald_worker_provider_seconds", dimensions: [("type", type)])
        enqueueToSent = Timer(label: "herald_worker_enqueue_to_sent_seconds", dimensions: [("type", type)])
        // Every outcome has a series from the first scrape, so a dashboard or an alert on a rate of them
        // shows 0 on a healthy new install rather than "no data".
        for outcome in JobOutcome.allCases { _ = job(outcome) }
    }

    /// The settings a worker runs with, as gauges an operator can compare across instances:
    /// `herald_worker_concurrency`, `herald_worker_prefetch`, `herald_worker_provider_rate_per_second`
    /// (`provider` label; absent when unlimited) and `herald_worker_spacing_seconds`, each by `type`.
    func settings(concurrency: Int, prefetch: Int?, providerRates: [(provider: String, policy: RatePolicy)], spacing: Duration) {
        Gauge(label: "herald_worker_concurrency", dimensions: [("type", type)]).record(concurrency)
        if let prefetch { Gauge(label: "herald_worker_prefetch", dimensions: [("type", type)]).record(prefetch) }
        for rate in providerRates {
            Gauge(label: "herald_worker_provider_rate_per_second", dimensions: [("type", type), ("provider", rate.provider)])
                .record(Double(rate.policy.limit) / rate.policy.period.seconds)
        }
        Gauge(label: "herald_worker_spacing_seconds", dimensions: [("type", type)]).record(spacing.seconds)
    }

    /// `herald_sms_provider_attempts_total{provider, outcome, code}`: every call to an SMS provider, by
    /// what it met (`sent`, `retry_later`, `provider_failure`, `refused`, `blocked`, `uncertain`) and
    /// the provider's code ("" when none).
    func attempt(provider: String, _ outcome: DeliveryOutcome) -> Counter {
        let label = outcome.attemptLabel
        let code = outcome.errorCode ?? ""
        return attempts.handle(provider, label, code) {
            Counter(label: "herald_sms_provider_attempts_total", dimensions: [("provider", provider), ("outcome", label), ("code", code)])
        }
    }

    /// `herald_worker_jobs_total{type, outcome}`.
    func job(_ outcome: JobOutcome) -> Counter {
        jobs.handle(outcome.rawValue) { Counter(label: "herald_worker_jobs_total", dimensions: [("type", type), ("outcome", outcome.rawValue)]) }
    }

    /// `herald_sms_segments_total{country, encoding}`.
    func segments(country: String, encoding: String) -> Counter {
        segments.handle(country, encoding) {
            Counter(label: "herald_sms_segments_total", dimensions: [("country", country), ("encoding", encoding)])
        }
    }

    /// `herald_sms_cost_total{country, currency}`.
    func cost(country: String, currency: String) -> FloatingPointCounter {
        cost.handle(country, currency) {
            FloatingPointCounter(label: "herald_sms_cost_total", dimensions: [("country", country), ("currency", currency)])
        }
    }
}

extension DeliveryOutcome {
    /// The `outcome` label of `herald_sms_provider_attempts_total`.
    var attemptLabel: String {
        switch self {
        case .sent: "sent"
        case .retryable: "retry_later"
        case .providerFailure: "provider_failure"
        case .permanent: "refused"
        case .blocked: "blocked"
        case .uncertain: "uncertain"
        }
    }
}
