import HeraldCore
import Metrics

/// herald-api's counters whose label values configuration already names (projects, limit kinds,
/// outcomes), made at 0 when it starts: a dashboard or an alert on their rate then reads 0 on a new
/// install, not "no data". Counters labelled by country or by status code get their series as values
/// appear.
enum KnownSeries {
    static func start(projects: [ProjectSettings]) {
        for outcome in ["granted", "refused", "failed"] {
            Counter(label: "herald_api_limit_leases_total", dimensions: [("outcome", outcome)]).increment(by: 0)
        }
        for project in projects.map(\.id) {
            for label in ["herald_api_apple_revocations_total", "herald_api_email_links_total", "herald_api_email_sign_ins_total"] {
                Counter(label: label, dimensions: [("project", project)]).increment(by: 0)
            }
            Counter(label: "herald_api_idp_sign_ins_total", dimensions: [("project", project), ("provider", AppleSignIn.providerID)]).increment(by: 0)
            Counter(label: "herald_api_sign_ins_total", dimensions: [("project", project), ("outcome", "ok")]).increment(by: 0)
            for environment in PushMessage.Environment.allCases {
                Counter(label: "herald_api_push_verifications_total", dimensions: [("project", project), ("environment", environment.rawValue)])
                    .increment(by: 0)
            }
            for kind in LimitKind.allCases where kind != .provider && kind != .spacing {
                Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project), ("limit", kind.configurationKey)])
                    .increment(by: 0)
            }
        }
    }
}
