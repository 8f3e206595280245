import HeraldCore
import HeraldCurl

/// What a transport failure means for an SMS, the same at every provider: a request that never left
/// is the provider failing (another provider may take the message); one that left and got no answer
/// is uncertain, because the provider may have sent the SMS.
enum ProviderTransport {
    static let knownErrorCodes = ["unreachable", "no_answer", "misconfigured", "transport"]

    /// `provider` names it in the reason (`Twilio`, `gateway`).
    static func outcome(of error: CurlError, provider: String) -> DeliveryOutcome {
        switch error.kind {
        case .couldNotConnect, .timedOutBeforeSending, .cancelledBeforeSending:
            .providerFailure(reason: "\(provider) unreachable: \(error.message)", code: "unreachable")
        case .failedAfterSending:
            .uncertain(reason: "\(provider) did not answer after the request was sent: \(error.message)", code: "no_answer")
        case .configuration:
            .providerFailure(reason: "\(provider) request misconfigured: \(error.message)", code: "misconfigured")
        case .other:
            .providerFailure(reason: "\(provider) transport error: \(error.message)", code: "transport")
        }
    }
}
