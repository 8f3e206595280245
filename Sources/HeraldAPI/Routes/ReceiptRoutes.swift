import Foundation
import HeraldChannels
import HeraldCore
import Hummingbird
import Metrics

/// Delivery receipts from SMS providers: `POST /callbacks/sms/{provider name}` (and, for Vonage, GET,
/// and the unsigned `/callbacks/sms/{name}/{receiptToken}`) moves a message that went out to
/// `delivered`, `undelivered`, or `failed` for a fraud block. Each provider's format and signature is
/// its own (`ProviderReceipt`). The generic gateway's callback is JSON
/// `{"reference": "<job id>", "messageId": "…", "status": "delivered" | "undelivered", "errorCode": "…"}`
/// signed as `ReceiptSignature` says (`X-Herald-Timestamp`, and `X-Herald-Signature` over the timestamp
/// and the raw body under its `callbackSecret`).
///
/// Answers: 204 applied, or nothing to change (an interim status, a message that never went out, or
/// one that already has its final status, which the first receipt gave: a provider retrying would not
/// help); 401 a bad, stale or missing signature (nothing changed); 404 an unknown provider name, receipt
/// token or reference (receipts off without a secret); 400 a body that is not such a receipt. Counted in
/// `herald_sms_receipts_total{provider,status,country}` (status `late`, `repeated`, `partial`,
/// `ignored` or `unknown` for receipts that changed no status).
struct ReceiptRoutes: Sendable {
    let ledger: any MessageLedger
    let sms: SMSSettings
    let clock: any WallClock

    init(ledger: any MessageLedger, sms: SMSSettings, clock: any WallClock) {
        self.ledger = ledger
        self.sms = sms
        self.clock = clock
        for provider in sms.providers {
            for status in ["delivered", "undelivered", "failed"] { Self.counter(provider.name, status, country: "").increment(by: 0) }
        }
    }

    func register(on router: Router<HeraldRequestContext>) {
        router.post("/callbacks/sms/:provider") { request, context -> Response in
            try await receive(request, provider: context.parameters.get("provider") ?? "", token: nil)
        }
        router.get("/callbacks/sms/:provider") { request, context -> Response in
            try await receive(request, provider: context.parameters.get("provider") ?? "", token: nil)
        }
        router.post("/callbacks/sms/:provider/:token") { request, context -> Response in
            try await receive(request, provider: context.parameters.get("provider") ?? "", token: context.parameters.get("token") ?? "")
        }
        router.get("/callbacks/sms/:provider/:token") { request, context -> Response in
            try await receive(request, provider: context.parameters.get("provider") ?? "", token: context.parameters.get("token") ?? "")
        }
    }

    private func receive(_ request: Request, provider name: String, token: String?) async throws -> Response {
        guard let provider = sms.provider(named: name) else { throw HeraldError(.notFound) }
        let buffer = try await request.body.collect(upTo: WireBody.maximumSize)
        let body = Data(buffer.readableBytesView)
        let receipt: ProviderReceipt
        switch provider.account {
        case .http(let gateway):
            guard token == nil, request.method == .post, let secret = gateway.callbackSecret else { throw HeraldError(.notFound) }
            if case .failure(let refusal) = ReceiptSignature(secret: secret).verify(
                body, timestamp: request.headers[.init(ReceiptSignature.timestampHeader)!],
                signature: request.headers[.init(ReceiptSignature.signatureHeader)!], now: clock.now)
            {
                throw HeraldError(.unauthenticated, refusal.message)
            }
            let gatewayReceipt = try Receipt(body)
            receipt = ProviderReceipt(
                jobID: gatewayReceipt.reference, status: gatewayReceipt.delivered ? .delivered : .undelivered,
                messageID: gatewayReceipt.messageID, errorCode: gatewayReceipt.errorCode)
        case .twilio(let account):
            guard token == nil, request.method == .post else { throw HeraldError(.notFound) }
            receipt = try Self.checked { () throws(ProviderReceipt.Refusal) in
                // The URL Twilio signed is the one Herald gave it, whatever a proxy did to the path.
                var parts = Self.parts(request, body)
                parts.path = "/callbacks/sms/\(name)"
                return try ProviderReceipt.twilio(parts, account: account, callbackBaseURL: sms.callbackBaseURL)
            }
        case .vonage(let account):
            receipt = try Self.checked { () throws(ProviderReceipt.Refusal) in
                try ProviderReceipt.vonage(Self.parts(request, body), account: account, token: token, now: clock.now)
            }
        case .telnyx(let account):
            guard token == nil, request.method == .post else { throw HeraldError(.notFound) }
            receipt = try Self.checked { () throws(ProviderReceipt.Refusal) in
                try ProviderReceipt.telnyx(Self.parts(request, body), account: account, now: clock.now)
            }
        case .console:
            throw HeraldError(.notFound)
        }
        guard let status = receipt.status else {
            Self.counter(name, "ignored", country: "").increment()
            return Response(status: .noContent)
        }
        let result = try await ledger.applyReceipt(
            jobID: receipt.jobID, status: status, segment: receipt.segment, providerMessageID: receipt.messageID, errorCode: receipt.errorCode,
            now: clock.now)
        switch result {
        case .applied(let destination):
            Self.counter(name, status.rawValue, country: (try? PhoneNumber(parsing: destination))?.region ?? "").increment()
        case .partial:
            Self.counter(name, "partial", country: "").increment()
        case .late:
            Self.counter(name, "late", country: "").increment()
        case .repeated:
            Self.counter(name, "repeated", country: "").increment()
        case .notSent:
            Self.counter(name, "ignored", country: "").increment()
        case .unknown:
            Self.counter(name, "unknown", country: "").increment()
            throw HeraldError(.notFound)
        }
        return Response(status: .noContent)
    }

    /// The request as `ProviderReceipt` reads it.
    static func parts(_ request: Request, _ body: Data) -> ProviderReceipt.Request {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        return ProviderReceipt.Request(
            method: request.method.rawValue, path: request.uri.path, query: request.uri.query, headers: headers, body: body)
    }

    static func checked(_ read: () throws(ProviderReceipt.Refusal) -> ProviderReceipt) throws(HeraldError) -> ProviderReceipt {
        do {
            return try read()
        } catch {
            switch error {
            case .unauthenticated(let why): throw HeraldError(.unauthenticated, why)
            case .notFound: throw HeraldError(.notFound)
            case .invalid(let why): throw HeraldError(.invalidArgument, why)
            }
        }
    }

    static func counter(_ provider: String, _ status: String, country: String) -> Counter {
        Counter(label: "herald_sms_receipts_total", dimensions: [("provider", provider), ("status", status), ("country", country)])
    }

    /// The generic gateway's callback body.
    struct Receipt {
        var reference: UUID
        var delivered: Bool
        var messageID: String?
        var errorCode: String?

        init(_ body: Data) throws(HeraldError) {
            guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { throw HeraldError(.invalidJSON) }
            guard let text = object["reference"] as? String, let reference = UUID(parsing: text) else {
                throw HeraldError(.invalidArgument, "reference must be the job id Herald sent as the message's reference")
            }
            switch object["status"] as? String {
            case "delivered": delivered = true
            case "undelivered": delivered = false
            default: throw HeraldError(.invalidArgument, "status must be delivered or undelivered")
            }
            self.reference = reference
            messageID = Self.text(object["messageId"])
            errorCode = Self.text(object["errorCode"])
        }

        /// A short printable string or number; anything else is dropped.
        static func text(_ value: Any?) -> String? {
            let text = (value as? String) ?? (value as? NSNumber)?.stringValue
            guard let text, text.isEmpty == false, text.count <= 128, text.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
                return nil
            }
            return text
        }
    }
}
