import Foundation
import HeraldChannels
import HeraldCore

/// A delivery receipt as a provider sends it, checked and read: which job, what became of it. Pure:
/// the request's parts and the clock come in, so each provider's rules are tested without a server.
///
/// Each provider's job reference travels where its signature covers it: Twilio's in the callback URL's
/// query (Twilio signs the URL), Vonage's in `client-ref` (signed, or on the secret token path), and
/// Telnyx's in the `webhook_url` of the signed body.
struct ProviderReceipt: Equatable {
    var jobID: UUID
    /// `delivered`, `undelivered` or `failed` (a fraud block); nil: an interim status (queued, sent,
    /// buffered) that changes nothing.
    var status: DeliveryStatus?
    /// The segment this receipt is for, at providers that report segments apart.
    var segment: String?
    var messageID: String?
    var errorCode: String?

    /// The request as the route received it.
    struct Request {
        var method: String
        /// The path as requested (`/callbacks/sms/twilio`).
        var path: String
        /// The raw query, without `?`.
        var query: String?
        var headers: [String: String]
        var body: Data

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    enum Refusal: Error, Equatable {
        /// 401: a bad, stale or missing signature.
        case unauthenticated(String)
        /// 404: the path names no receipt endpoint (a wrong token).
        case notFound
        /// 400: not a receipt of this provider.
        case invalid(String)
    }

    /// Twilio codes that mean the destination was blocked as SMS pumping.
    static let twilioFraudCodes: Set<String> = ["30450", "30453"]
    /// Telnyx codes that mean the message was blocked as spam.
    static let telnyxFraudCodes: Set<String> = ["40002", "40003"]

    // MARK: Twilio

    /// A status callback: form fields, `X-Twilio-Signature` over the URL as configured
    /// (`callbackBaseURL` + the path and query requested, never the Host header) and the fields.
    static func twilio(_ request: Request, account: SMSProviderSettings.Twilio, callbackBaseURL: String?) throws(Refusal) -> ProviderReceipt {
        guard let base = callbackBaseURL, account.authToken.isEmpty == false else { throw .notFound }
        guard let signature = request.header("X-Twilio-Signature") else { throw .unauthenticated("X-Twilio-Signature is missing") }
        let url = base + request.path + (request.query.map { "?" + $0 } ?? "")
        let fields = formPairs(request.body)
        guard TwilioSignature.isValid(signature, url: url, parameters: fields, authToken: account.authToken) else {
            throw .unauthenticated("X-Twilio-Signature does not match")
        }
        let form = Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        guard let job = queryValue(request.query, "job").flatMap(UUID.init(parsing:)) else {
            throw .invalid("the callback URL carries no job (?job=)")
        }
        let code = form["ErrorCode"].flatMap { $0.isEmpty ? nil : String($0.prefix(16)) }
        let status: DeliveryStatus? =
            switch form["MessageStatus"] ?? form["SmsStatus"] {
            case "delivered": .delivered
            case "undelivered", "failed": code.map(twilioFraudCodes.contains) == true ? .failed : .undelivered
            case .some: nil
            case nil: throw .invalid("MessageStatus is missing")
            }
        return ProviderReceipt(jobID: job, status: status, messageID: printable(form["MessageSid"]), errorCode: code)
    }

    // MARK: Vonage

    /// A delivery receipt by GET query, form POST or JSON POST. On the token path (`token` is the path's
    /// last part) it needs no signature; elsewhere a good `sig` within 5 minutes, when a signature
    /// secret is set. One receipt per segment.
    static func vonage(_ request: Request, account: SMSProviderSettings.Vonage, token: String?, now: Date) throws(Refusal) -> ProviderReceipt {
        var fields: [String: String] = [:]
        if request.method == "GET" {
            fields = Dictionary(formPairs(Data((request.query ?? "").utf8)).map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        } else if request.body.first == UInt8(ascii: "{") {
            guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] else { throw .invalid("not JSON") }
            for (key, value) in object {
                if let text = value as? String { fields[key] = text } else if let number = value as? Int { fields[key] = String(number) }
            }
        } else {
            fields = Dictionary(formPairs(request.body).map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        if let token {
            guard let expected = account.receiptToken, constantTimeEquals(Array(expected.utf8), Array(token.utf8)) else { throw .notFound }
        } else {
            guard let secret = account.signatureSecret else { throw .notFound }
            guard fields["sig"] != nil else { throw .unauthenticated("sig is missing") }
            guard VonageSignature.isValid(fields, secret: secret, method: account.signatureMethod, now: now) else {
                throw .unauthenticated("sig does not match, or its timestamp is not within 5 minutes")
            }
        }
        guard let job = fields["client-ref"].flatMap(UUID.init(parsing:)) else { throw .invalid("client-ref is not a Herald job") }
        let code = fields["err-code"].flatMap { $0 == "0" || $0.isEmpty ? nil : String($0.prefix(16)) }
        let status: DeliveryStatus? =
            switch fields["status"] {
            case "delivered": .delivered
            case "failed", "rejected", "expired", "undeliverable": .undelivered
            case .some: nil
            case nil: throw .invalid("status is missing")
            }
        let id = printable(fields["messageId"])
        return ProviderReceipt(jobID: job, status: status, segment: id, messageID: id, errorCode: code)
    }

    // MARK: Telnyx

    /// A webhook: Ed25519 over `telnyx-timestamp|body` under the account's public key, within 300 s.
    /// Only `message.finalized` decides; other events change nothing.
    static func telnyx(_ request: Request, account: SMSProviderSettings.Telnyx, now: Date) throws(Refusal) -> ProviderReceipt {
        guard let key = account.publicKey else { throw .notFound }
        guard let signature = request.header("telnyx-signature-ed25519"), let timestamp = request.header("telnyx-timestamp") else {
            throw .unauthenticated("telnyx-signature-ed25519 or telnyx-timestamp is missing")
        }
        guard TelnyxSignature.isValid(signature: signature, timestamp: timestamp, body: request.body, publicKey: key, now: now) else {
            throw .unauthenticated("the signature does not match, or its timestamp is not within 300 s")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any], let data = object["data"] as? [String: Any],
            let payload = data["payload"] as? [String: Any]
        else { throw .invalid("not a Telnyx webhook") }
        guard let webhook = payload["webhook_url"] as? String,
            let job = queryValue(URLComponents(string: webhook)?.query, "job").flatMap(UUID.init(parsing:))
        else { throw .invalid("the message's webhook_url carries no job") }
        let errors = payload["errors"] as? [[String: Any]] ?? []
        let code = errors.first.flatMap { ($0["code"] as? String) ?? ($0["code"] as? Int).map(String.init) }.map { String($0.prefix(16)) }
        var status: DeliveryStatus? = nil
        if data["event_type"] as? String == "message.finalized" {
            switch ((payload["to"] as? [[String: Any]])?.first?["status"] as? String) ?? "" {
            case "delivered": status = .delivered
            case "sending_failed", "delivery_failed": status = code.map(telnyxFraudCodes.contains) == true ? .failed : .undelivered
            default: status = nil
            }
        }
        return ProviderReceipt(jobID: job, status: status, messageID: printable(payload["id"] as? String), errorCode: code)
    }

    // MARK: helpers

    /// Form fields in order, decoded (`+` is a space), repeated names kept.
    static func formPairs(_ body: Data) -> [(name: String, value: String)] {
        FormEncoding.pairs(String(decoding: body, as: UTF8.self))
    }

    static func queryValue(_ query: String?, _ name: String) -> String? {
        formPairs(Data((query ?? "").utf8)).first { $0.name == name }?.value
    }

    /// Short printable text, else nil (a provider's id goes into the ledger).
    static func printable(_ text: String?) -> String? {
        guard let text, text.isEmpty == false, text.count <= 128, text.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            return nil
        }
        return text
    }
}
