import Foundation
import HeraldCore
import HeraldCurl
import Logging

/// Sends SMS through any HTTP gateway: one POST of the configured body template with the configured
/// headers. 2xx is sent; 408, 425 and 429 are retried at the gateway (honouring `Retry-After`); 5xx is
/// a provider failure (the next provider of the route takes over); other 4xx are permanent. A
/// transport failure before the request left is a provider failure; one after it left is
/// "uncertain", because the gateway may have sent the SMS.
public struct HTTPGatewayChannel: SMSChannel {
    public let name: String
    public var knownErrorCodes: [String] { ProviderTransport.knownErrorCodes }
    let client: CurlClient
    let settings: SMSSettings.HTTPGateway
    let escaping: Template.Escaping
    let messageID: JSONPointer?
    let errorCode: JSONPointer?

    public init(name: String = "http", client: CurlClient, settings: SMSSettings.HTTPGateway) {
        self.name = name
        self.client = client
        self.settings = settings
        self.messageID = settings.messageIdPath.flatMap(JSONPointer.init)
        self.errorCode = settings.errorCodePath.flatMap(JSONPointer.init)
        let type = settings.contentType.lowercased()
        if type.hasPrefix("application/json") {
            escaping = .jsonString
        } else if type.hasPrefix("application/x-www-form-urlencoded") {
            escaping = .formURLEncoded
        } else {
            escaping = .none
        }
    }

    public func deliver(_ message: OutgoingSMS) async -> DeliveryReport {
        DeliveryReport(await outcome(of: message))
    }

    func outcome(of message: OutgoingSMS) async -> DeliveryOutcome {
        guard let url = settings.url else { return .providerFailure(reason: "sms.http.url is not configured", code: "misconfigured") }
        let body = settings.bodyTemplate.render(
            [
                "to": message.to, "body": message.body, "reference": message.jobID.lowercasedText,
                "expiresAt": Timestamp.format(message.expiresAt), "project": message.project,
            ], escaping: escaping)
        var headers = settings.headers.map { (name: $0.key, value: $0.value) }
        if settings.headers.keys.contains(where: { $0.lowercased() == "content-type" }) == false {
            headers.append(("Content-Type", settings.contentType))
        }
        headers.append(("Idempotency-Key", message.jobID.lowercasedText))
        let request = CurlHTTPRequest(url: url, headers: headers, body: Data(body.utf8), timeout: settings.timeout)
        do {
            let response = try await client.perform(request)
            return Self.outcome(
                status: response.status, retryAfter: response.retryAfter, body: response.body, messageID: messageID, errorCode: errorCode,
                sent: message.body, destination: message.to)
        } catch {
            return ProviderTransport.outcome(of: error, provider: "gateway")
        }
    }

    /// Maps a gateway's HTTP answer. A 2xx answer's message id (at `messageID`) is kept when it is
    /// short printable text; anything else is not an id. Any other answer's code is the value at
    /// `errorCode` when the body has one (a provider's own, such as Twilio's 21211), else `http_<status>`;
    /// a refusal quotes the body for operators with the text Herald sent taken out (`ProviderEcho`),
    /// since gateways echo messages and a message carries a code.
    static func outcome(
        status: Int, retryAfter: Duration?, body: Data, messageID: JSONPointer? = nil, errorCode: JSONPointer? = nil, sent: String = "",
        destination: String = ""
    ) -> DeliveryOutcome {
        func short(_ text: String?) -> String? {
            text.flatMap { $0.isEmpty == false && $0.count <= 128 && $0.unicodeScalars.allSatisfy { (0x21...0x7E).contains($0.value) } ? $0 : nil }
        }
        switch status {
        case 200..<300:
            return .sent(reference: short(messageID?.text(in: body)))
        case 408, 425, 429:
            let code = short(errorCode?.text(in: body)).map { ProviderEcho.scrub($0, sent: sent, destination: destination) } ?? "http_\(status)"
            return .retryable(reason: "gateway answered HTTP \(status)", retryAfter: retryAfter, code: code)
        case 500..<600:
            let code = short(errorCode?.text(in: body)).map { ProviderEcho.scrub($0, sent: sent, destination: destination) } ?? "http_\(status)"
            return .providerFailure(reason: "gateway answered HTTP \(status)", code: code)
        default:
            let code = short(errorCode?.text(in: body)).map { ProviderEcho.scrub($0, sent: sent, destination: destination) } ?? "http_\(status)"
            let snippet = ProviderEcho.scrub(String(decoding: body.prefix(200), as: UTF8.self), sent: sent, destination: destination)
            return .permanent(reason: "gateway answered HTTP \(status): \(snippet)", code: code)
        }
    }
}
