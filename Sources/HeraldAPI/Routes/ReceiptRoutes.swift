import Foundation
import HeraldCore
import Hummingbird
import Metrics

/// Delivery receipts from SMS providers: `POST /callbacks/sms/{provider}` moves a message that went out
/// to `delivered` or `undelivered`. Only the generic gateway (`http`) is known; its callback is JSON
/// `{"reference": "<job id>", "messageId": "…", "status": "delivered" | "undelivered", "errorCode": "…"}`
/// signed as `ReceiptSignature` says (`X-Herald-Timestamp`, and `X-Herald-Signature` over the timestamp
/// and the raw body under `sms.http.callbackSecret`). Answers: 204 applied, or nothing to change (the
/// message never went out, or already has its final status, which the first receipt gave: a provider
/// retrying would not help), 401 bad, stale or missing signature (nothing changed), 404 unknown
/// reference or provider (receipts off without a secret), 400 a body that is not such a receipt.
/// Counted in `herald_sms_receipts_total{status,country}` (status `late`, `repeated`, `ignored` or
/// `unknown` for receipts that changed no status).
struct ReceiptRoutes: Sendable {
    let ledger: any MessageLedger
    /// From `sms.http.callbackSecret`; nil: the endpoint answers 404.
    let signature: ReceiptSignature?
    let clock: any WallClock

    init(ledger: any MessageLedger, secret: Data?, clock: any WallClock) {
        self.ledger = ledger
        signature = secret.map(ReceiptSignature.init(secret:))
        self.clock = clock
    }

    func register(on router: Router<HeraldRequestContext>) {
        router.post("/callbacks/sms/:provider") { request, context -> Response in
            guard context.parameters.get("provider") == "http", let signature else { throw HeraldError(.notFound) }
            let buffer = try await request.body.collect(upTo: WireBody.maximumSize)
            let body = Data(buffer.readableBytesView)
            if case .failure(let refusal) = signature.verify(
                body, timestamp: request.headers[.init(ReceiptSignature.timestampHeader)!],
                signature: request.headers[.init(ReceiptSignature.signatureHeader)!], now: clock.now)
            {
                throw HeraldError(.unauthenticated, refusal.message)
            }
            let receipt = try Receipt(body)
            let result = try await ledger.applyReceipt(
                jobID: receipt.reference, delivered: receipt.delivered, providerMessageID: receipt.messageID, errorCode: receipt.errorCode,
                now: clock.now)
            switch result {
            case .applied(let destination):
                Self.count(receipt.delivered ? "delivered" : "undelivered", country: (try? PhoneNumber(parsing: destination))?.region ?? "")
            case .late:
                Self.count("late", country: "")
            case .repeated:
                Self.count("repeated", country: "")
            case .notSent:
                Self.count("ignored", country: "")
            case .unknown:
                Self.count("unknown", country: "")
                throw HeraldError(.notFound)
            }
            return Response(status: .noContent)
        }
    }

    static func count(_ status: String, country: String) {
        Counter(label: "herald_sms_receipts_total", dimensions: [("status", status), ("country", country)]).increment()
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
