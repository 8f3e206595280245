import Foundation
import HeraldCore
import HeraldCurl

/// Twilio Programmable Messaging: a form POST to `/2010-04-01/Accounts/{sid}/Messages.json` under
/// basic auth (the account SID and auth token, or an API key), answered 201 with the message
/// resource, or an error object whose `code` says what happened (`TwilioChannel.classify`).
public struct TwilioChannel: SMSChannel {
    public let name: String
    public var knownErrorCodes: [String] { ProviderTransport.knownErrorCodes }
    let client: CurlClient
    let provider: SMSProviderSettings
    let account: SMSProviderSettings.Twilio
    /// `sms.callbackBaseUrl`: status callbacks go to `<base>/callbacks/sms/<name>?job=<job id>`.
    let callbackBaseURL: String?

    public init(client: CurlClient, provider: SMSProviderSettings, account: SMSProviderSettings.Twilio, callbackBaseURL: String?) {
        self.name = provider.name
        self.client = client
        self.provider = provider
        self.account = account
        self.callbackBaseURL = callbackBaseURL
    }

    /// Twilio keeps a message queued at most this long (its SDKs' documented ceiling).
    static let longestValidity = 14_400

    public func deliver(_ message: OutgoingSMS) async -> DeliveryReport {
        await ProviderTransport.send(request(for: message), with: client, provider: "Twilio", name: name, message: message) {
            Self.report(status: $0.status, retryAfter: $0.retryAfter, body: $0.body, sent: message)
        }
    }

    /// The request for `message` (nil: no sender for its region and no messaging service).
    func request(for message: OutgoingSMS) -> CurlHTTPRequest? {
        var fields: [(name: String, value: String)] = [("To", message.to)]
        if let service = account.messagingServiceSid {
            fields.append(("MessagingServiceSid", service))
        } else if let from = provider.senders.sender(for: message) {
            fields.append(("From", from))
        } else {
            return nil
        }
        fields.append(("Body", message.body))
        // Sent explicitly: Twilio's default keeps a message for hours, long after its code is useless.
        fields.append(("ValidityPeriod", String(min(Self.longestValidity, message.remainingSeconds))))
        if let url = statusCallback(for: message.jobID) { fields.append(("StatusCallback", url)) }
        let (user, password) = account.apiKey.map { ($0.sid, $0.secret) } ?? (account.accountSid, account.authToken)
        return CurlHTTPRequest(
            url: "\(provider.baseURL)/2010-04-01/Accounts/\(account.accountSid)/Messages.json",
            headers: [
                ("Authorization", "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ], body: Data(FormEncoding.encode(fields).utf8), timeout: provider.timeout)
    }

    /// Where Twilio posts the message's statuses: the job's id rides in the query (which the
    /// signature covers), so a callback that arrives before the send was recorded still finds its job.
    /// nil without a public base URL or an auth token to check the callback with.
    func statusCallback(for jobID: UUID) -> String? {
        guard let base = callbackBaseURL, account.authToken.isEmpty == false else { return nil }
        return "\(base)/callbacks/sms/\(name)?job=\(jobID.lowercasedText)"
    }

    /// Maps Twilio's answer. 2xx is sent, with the message SID and price when Twilio gave one (it
    /// usually prices later); an error's `code` decides the rest.
    static func report(status: Int, retryAfter: Duration?, body: Data, sent: OutgoingSMS? = nil) -> DeliveryReport {
        let answer = ProviderAnswer(body)
        if (200..<300).contains(status) {
            let sid = ProviderAnswer.short(answer?.text("sid"))
            if let state = answer?.text("status"), state == "failed" || state == "undelivered" {
                let code = answer?.text("error_code").flatMap(Int.init)
                return DeliveryReport(classify(code: code, status: status, message: "message \(state)", retryAfter: retryAfter))
            }
            var price: ProviderPrice? = nil
            if let amount = answer?.text("price"), let unit = ProviderAnswer.short(answer?.text("price_unit"), limit: 3), Double(amount) != nil {
                // Twilio writes what it charged as a negative amount.
                price = ProviderPrice(amount: amount.hasPrefix("-") ? String(amount.dropFirst()) : amount, currency: unit)
            }
            return DeliveryReport(.sent(reference: sid), price: price)
        }
        let code = answer?.text("code").flatMap(Int.init)
        var message = answer?.text("message") ?? "HTTP \(status)"
        if let sent { message = ProviderEcho.scrub(message, sent: sent.body, destination: sent.to) }
        return DeliveryReport(classify(code: code, status: status, message: String(message.prefix(200)), retryAfter: retryAfter))
    }

    /// What a Twilio error code means for the message (docs/providers.md lists them).
    static func classify(code: Int?, status: Int, message: String, retryAfter: Duration?) -> DeliveryOutcome {
        let label = code.map(String.init) ?? "http_\(status)"
        let reason = "Twilio \(label): \(message)"
        switch code {
        case 30450, 30453:
            return .blocked(reason: reason, code: label)
        case 20429, 14107:
            return .retryable(reason: reason, retryAfter: retryAfter, code: label)
        case 21211, 21217, 21265, 21401, 21421, 21610, 21612, 21614, 21635, 30003, 30004, 30005, 30006:
            return .permanent(reason: reason, code: label)
        case nil:
            if status == 429 { return .retryable(reason: reason, retryAfter: retryAfter, code: label) }
            return .providerFailure(reason: reason, code: label)
        default:
            // Auth and account errors (20003, 20005, 30002), sender and region set-up (21606, 21212,
            // 21408), queues (21611, 30001), Twilio's own timeouts (30410), unknown codes, 5xx: this
            // provider cannot take the message now; another may.
            return .providerFailure(reason: reason, code: label)
        }
    }
}
