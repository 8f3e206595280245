import HeraldCore
import HeraldCurl

/// What a transport failure means for an SMS, the same at every provider: a request that never left
/// is the provider failing (another provider may take the message); one that left and got no answer
/// is uncertain, because the provider may have sent the SMS.
enum ProviderTransport {
    static let knownErrorCodes = ["unreachable", "no_answer", "misconfigured", "transport"]

    /// One request to a provider and its answer as `report` reads it; nil `request` (no sender for the
    /// destination's region at the provider `name`) is a provider failure, so another provider may
    /// take the message.
    static func send(
        _ request: CurlHTTPRequest?, with client: CurlClient, provider: String, name: String, message: OutgoingSMS,
        _ report: (CurlHTTPResponse) -> DeliveryReport
    ) async -> DeliveryReport {
        guard let request else {
            return DeliveryReport(.providerFailure(reason: "no sender for region \(message.region) at \(name)", code: "no_sender"))
        }
        do {
            return report(try await client.perform(request))
        } catch {
            return DeliveryReport(outcome(of: error, provider: provider))
        }
    }

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
