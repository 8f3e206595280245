import Foundation
import HeraldCore
import HeraldCurl

/// Telnyx Messaging v2: a JSON POST to `/v2/messages` under a bearer API key, answered 200 with the
/// message, or an `errors` array whose first code says what happened (`TelnyxChannel.classify`).
public struct TelnyxChannel: SMSChannel {
    public let name: String
    public var knownErrorCodes: [String] { ProviderTransport.knownErrorCodes }
    let client: CurlClient
    let provider: SMSProviderSettings
    let account: SMSProviderSettings.Telnyx
    let callbackBaseURL: String?

    public init(client: CurlClient, provider: SMSProviderSettings, account: SMSProviderSettings.Telnyx, callbackBaseURL: String?) {
        self.name = provider.name
        self.client = client
        self.provider = provider
        self.account = account
        self.callbackBaseURL = callbackBaseURL
    }

    public func deliver(_ message: OutgoingSMS) async -> DeliveryReport {
        await ProviderTransport.send(request(for: message), with: client, provider: "Telnyx", name: name, message: message) {
            Self.report(status: $0.status, retryAfter: $0.retryAfter, body: $0.body, sent: message)
        }
    }

    /// The request for `message` (nil: no sender for its region and no messaging profile).
    func request(for message: OutgoingSMS) -> CurlHTTPRequest? {
        let from = provider.senders.sender(for: message)
        guard from != nil || account.messagingProfileId != nil else { return nil }
        // The job travels in the webhook URL, so a webhook that arrives before the send was recorded
        // still finds its job; Telnyx signs the body, which carries the URL.
        let webhook = callbackBaseURL.flatMap { base in
            account.publicKey == nil ? nil : "\(base)/callbacks/sms/\(name)?job=\(message.jobID.lowercasedText)"
        }
        var body = JSONWriter()
        body.object([
            ("from", from.map(JSONWriter.Value.string)), ("messaging_profile_id", account.messagingProfileId.map(JSONWriter.Value.string)),
            ("text", .string(message.body)), ("to", .string(message.to)), ("type", .string("SMS")),
            ("webhook_url", webhook.map(JSONWriter.Value.string)),
        ])
        return CurlHTTPRequest(
            url: "\(provider.baseURL)/v2/messages",
            headers: [("Authorization", "Bearer \(account.apiKey)"), ("Content-Type", "application/json"), ("Accept", "application/json")],
            body: Data(body.text.utf8), timeout: provider.timeout)
    }

    /// Maps Telnyx's answer: 2xx is sent (the message id, the cost when priced); otherwise the first
    /// of `errors` decides, or the status when there is none.
    static func report(status: Int, retryAfter: Duration?, body: Data, sent: OutgoingSMS? = nil) -> DeliveryReport {
        let answer = ProviderAnswer(body)
        if (200..<300).contains(status) {
            let data = answer?.child("data")
            var price: ProviderPrice? = nil
            if let cost = data?.child("cost"), let amount = cost.text("amount"), Decimal(string: amount) != nil,
                let currency = ProviderAnswer.short(cost.text("currency"), limit: 3)
            {
                price = ProviderPrice(amount: amount, currency: currency)
            }
            return DeliveryReport(.sent(reference: ProviderAnswer.short(data?.text("id"))), price: price)
        }
        let error = answer?.objects("errors").first
        var text = error.flatMap { $0.text("detail") ?? $0.text("title") } ?? "HTTP \(status)"
        if let sent { text = ProviderEcho.scrub(text, sent: sent.body, destination: sent.to) }
        return DeliveryReport(
            classify(
                code: ProviderAnswer.short(error?.text("code"), limit: 8), status: status, text: String(text.prefix(200)), retryAfter: retryAfter))
    }

    /// What a Telnyx error code means for the message (docs/providers.md lists them).
    static func classify(code: String?, status: Int, text: String, retryAfter: Duration?) -> DeliveryOutcome {
        let label = code ?? "http_\(status)"
        let reason = "Telnyx \(label): \(text)"
        switch code {
        case "40002", "40003":
            // Flagged as spam by Telnyx or the carrier: another route would only get round the block.
            return .blocked(reason: reason, code: label)
        case "10011", "40011", "40006":
            return .retryable(reason: reason, retryAfter: retryAfter, code: label)
        case "10016", "40001", "40008", "40012", "40300":
            // Not E.164, not routable, undeliverable, invalid destination, the recipient sent STOP.
            return .permanent(reason: reason, code: label)
        case nil where status == 429:
            return .retryable(reason: reason, retryAfter: retryAfter, code: label)
        default:
            // Authentication (10009), the account and its numbers, unknown codes, 5xx.
            return .providerFailure(reason: reason, code: label)
        }
    }
}
