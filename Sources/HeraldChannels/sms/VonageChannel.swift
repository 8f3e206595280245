import Foundation
import HeraldCore
import HeraldCurl

/// The Vonage SMS API: a form POST to `/sms/json`, authenticated by the API secret or signed with the
/// signature secret. Vonage answers 200 even when it refuses: the answer lists one entry per segment,
/// and each entry's `status` says what became of that segment (`VonageChannel.classify`).
public struct VonageChannel: SMSChannel {
    public let name: String
    public var knownErrorCodes: [String] { ProviderTransport.knownErrorCodes }
    let client: CurlClient
    let provider: SMSProviderSettings
    let account: SMSProviderSettings.Vonage
    let callbackBaseURL: String?
    let clock: @Sendable () -> Date

    public init(
        client: CurlClient, provider: SMSProviderSettings, account: SMSProviderSettings.Vonage, callbackBaseURL: String?,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.name = provider.name
        self.client = client
        self.provider = provider
        self.account = account
        self.callbackBaseURL = callbackBaseURL
        self.clock = clock
    }

    /// Vonage refuses a `ttl` below 20 s.
    static let shortestTTL = 20_000

    public func deliver(_ message: OutgoingSMS) async -> DeliveryReport {
        await ProviderTransport.send(request(for: message), with: client, provider: "Vonage", name: name, message: message) {
            Self.report(status: $0.status, retryAfter: $0.retryAfter, body: $0.body, sent: message)
        }
    }

    /// The request's form fields for `message` (nil: no sender for its region).
    func fields(for message: OutgoingSMS) -> [String: String]? {
        guard let from = provider.senders.sender(for: message) else { return nil }
        var fields = [
            "api_key": account.apiKey, "from": from, "to": String(message.to.drop { $0 == "+" }), "text": message.body,
            // GSM-7 text (é, ß and £ are in its alphabet) stays `text`: `unicode` would double the segments.
            "type": SMSSegments(message.body).encoding == .gsm7 ? "text" : "unicode",
            "ttl": String(max(Self.shortestTTL, message.remainingSeconds * 1000)), "client-ref": message.jobID.lowercasedText,
        ]
        if let callback = receiptURL() {
            fields["callback"] = callback
            fields["status-report-req"] = "1"
        }
        if let secret = account.signatureSecret {
            // Signed: the secret never travels (sending it beside `sig` is Vonage's status 32).
            fields["timestamp"] = String(Int(clock().timeIntervalSince1970))
            fields["sig"] = VonageSignature.sign(fields, secret: secret, method: account.signatureMethod)
        } else if let secret = account.apiSecret {
            fields["api_secret"] = secret
        }
        return fields
    }

    func request(for message: OutgoingSMS) -> CurlHTTPRequest? {
        guard let fields = fields(for: message) else { return nil }
        return CurlHTTPRequest(
            url: "\(provider.baseURL)/sms/json", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(FormEncoding.encode(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }).utf8), timeout: provider.timeout)
    }

    /// Where receipts go: the token path when a receipt token is set (Vonage signs receipts only when
    /// its support enables it), else the signed one; nil without a public base URL. The job travels in
    /// `client-ref`, which Vonage echoes.
    func receiptURL() -> String? {
        guard let base = callbackBaseURL else { return nil }
        if let token = account.receiptToken { return "\(base)/callbacks/sms/\(name)/\(token)" }
        return account.signatureSecret == nil ? nil : "\(base)/callbacks/sms/\(name)"
    }

    /// Maps Vonage's answer: every segment's `status` decides. All `0` is sent (the first segment's
    /// id, the segments' prices summed); a refusal of every segment is classified by the first; some
    /// sent and some refused left part of the message with the handset's network, so it is uncertain
    /// (sending it again would repeat those parts).
    static func report(status: Int, retryAfter: Duration?, body: Data, sent: OutgoingSMS? = nil) -> DeliveryReport {
        guard status == 200 else {
            let label = "http_\(status)"
            if status == 429 { return DeliveryReport(.retryable(reason: "Vonage answered HTTP 429", retryAfter: retryAfter, code: label)) }
            return DeliveryReport(.providerFailure(reason: "Vonage answered HTTP \(status)", code: label))
        }
        let segments = ProviderAnswer(body)?.objects("messages") ?? []
        guard segments.isEmpty == false else {
            return DeliveryReport(.uncertain(reason: "Vonage answered 200 without messages", code: "no_messages"))
        }
        let refused = segments.filter { $0.text("status") != "0" }
        guard refused.isEmpty else {
            let first = refused[0]
            var text = first.text("error-text") ?? "status \(first.text("status") ?? "?")"
            if let sent { text = ProviderEcho.scrub(text, sent: sent.body, destination: String(sent.to.drop { $0 == "+" })) }
            let code = ProviderAnswer.short(first.text("status"), limit: 8) ?? "unknown"
            if refused.count < segments.count {
                return DeliveryReport(
                    .uncertain(
                        reason: "Vonage sent \(segments.count - refused.count) of \(segments.count) segments; status \(code): \(text)", code: code))
            }
            return DeliveryReport(classify(status: code, text: String(text.prefix(200)), retryAfter: retryAfter))
        }
        let id = ProviderAnswer.short(segments[0].text("message-id"))
        let prices = segments.compactMap { $0.text("message-price").flatMap { Decimal(string: $0) } }
        let price =
            prices.count == segments.count ? ProviderPrice(amount: "\(prices.reduce(Decimal(0), +))", currency: "EUR") : nil
        return DeliveryReport(.sent(reference: id), price: price)
    }

    /// What a Vonage status means for the message (docs/providers.md lists them).
    static func classify(status: String, text: String, retryAfter: Duration?) -> DeliveryOutcome {
        let reason = "Vonage status \(status): \(text)"
        switch status {
        case "1", "10":
            // Throttled, too many connections: the same account takes it a moment later.
            return .retryable(reason: reason, retryAfter: retryAfter, code: status)
        case "6", "7", "33":
            // Unroutable prefix, barred or deactivated number.
            return .permanent(reason: reason, code: status)
        default:
            // Internal errors (5, 13), credentials and account (4, 8, 9, 11, 14, 29, 32), this account's
            // request or sender (2, 3, 12, 15, 22, 23), unknown statuses: another provider may take it.
            return .providerFailure(reason: reason, code: status)
        }
    }
}
