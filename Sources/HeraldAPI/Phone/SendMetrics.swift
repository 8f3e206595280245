import HeraldCore
import Metrics

/// The metric handles of every send, made once: making one goes through the metrics factory (a
/// registry lookup by name and labels under its lock, and an allocation), three per send. Sends
/// counted by project, outcome and country are kept by those labels (`HandleCache`).
final class SendMetrics: Sendable {
    /// `herald_api_admission_seconds`: the store transaction of a send.
    let admission = Timer(label: "herald_api_admission_seconds")
    /// `herald_api_publish_confirm_seconds`: the broker's confirm of a send's job.
    let publishConfirm = Timer(label: "herald_api_publish_confirm_seconds")
    private let sends = HandleCache<Counter>()

    /// `herald_api_verification_sends_total{project, outcome, country}`.
    func sends(project: String, outcome: String, country: String) -> Counter {
        sends.handle(project, outcome, country) {
            Counter(label: "herald_api_verification_sends_total", dimensions: [("project", project), ("outcome", outcome), ("country", country)])
        }
    }
}
