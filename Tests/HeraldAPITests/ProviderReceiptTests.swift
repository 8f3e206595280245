import Crypto
import Foundation
import HeraldChannels
import HeraldCore
import Testing

@testable import HeraldAPI

/// Each provider's receipt rules without a server: what is read, what is refused and as what.
@Suite("Provider receipts")
struct ProviderReceiptTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let job = UUID(uuidString: "0190a5a4-2222-7000-8000-000000000002")!
    static let base = "https://auth.example.com"
    typealias Request = ProviderReceipt.Request

    /// What `read` was refused as (nil: it was read).
    static func refusal(_ read: () throws -> ProviderReceipt) -> ProviderReceipt.Refusal? {
        do {
            _ = try read()
            return nil
        } catch {
            return error as? ProviderReceipt.Refusal ?? .invalid("not a refusal: \(error)")
        }
    }

    // MARK: Twilio

    static let twilio = SMSProviderSettings.Twilio(accountSid: "AC" + String(repeating: "d4", count: 16), authToken: "token")

    static func twilioRequest(_ fields: [(name: String, value: String)], query: String? = "job=\(job.lowercasedText)", signedURL: String? = nil)
        -> Request
    {
        let url = signedURL ?? base + "/callbacks/sms/twilio" + (query.map { "?" + $0 } ?? "")
        let signature = TwilioSignature.sign(url: url, parameters: fields, authToken: "token")
        return Request(
            method: "POST", path: "/callbacks/sms/twilio", query: query, headers: ["x-twilio-signature": signature],
            body: Data(FormEncoding.encode(fields).utf8))
    }

    @Test("Twilio: statuses map to delivered, undelivered, failed for a fraud code, or nothing for interim ones; the job from the signed URL")
    func twilioStatuses() throws {
        func read(_ status: String, _ code: String? = nil) throws -> ProviderReceipt {
            var fields: [(name: String, value: String)] = [("MessageSid", "SM1"), ("MessageStatus", status), ("To", "+447700900123")]
            if let code { fields.append(("ErrorCode", code)) }
            return try ProviderReceipt.twilio(Self.twilioRequest(fields), account: Self.twilio, callbackBaseURL: Self.base)
        }
        #expect(try read("delivered") == ProviderReceipt(jobID: Self.job, status: .delivered, messageID: "SM1"))
        #expect(try read("undelivered", "30003").status == .undelivered)
        #expect(try read("failed", "30450") == ProviderReceipt(jobID: Self.job, status: .failed, messageID: "SM1", errorCode: "30450"))
        #expect(try read("sent").status == nil)
    }

    @Test("Twilio: a signature over another URL, host, token or field set is refused; the URL with :443 is Twilio's too")
    func twilioSignatures() {
        let fields: [(name: String, value: String)] = [("MessageSid", "SM1"), ("MessageStatus", "delivered")]
        let good = Self.twilioRequest(fields)
        #expect(
            Self.refusal { try ProviderReceipt.twilio(good, account: Self.twilio, callbackBaseURL: "https://evil.example.com") }
                == .unauthenticated("X-Twilio-Signature does not match"))
        var tampered = good
        tampered.body = Data(FormEncoding.encode(fields + [("ErrorCode", "1")]).utf8)
        #expect(
            Self.refusal { try ProviderReceipt.twilio(tampered, account: Self.twilio, callbackBaseURL: Self.base) }
                == .unauthenticated("X-Twilio-Signature does not match"))
        var unsigned = good
        unsigned.headers = [:]
        #expect(
            Self.refusal { try ProviderReceipt.twilio(unsigned, account: Self.twilio, callbackBaseURL: Self.base) }
                == .unauthenticated("X-Twilio-Signature is missing"))
        let withPort = Self.twilioRequest(
            fields, signedURL: "https://auth.example.com:443/callbacks/sms/twilio?job=\(Self.job.lowercasedText)")
        #expect(Self.refusal { try ProviderReceipt.twilio(withPort, account: Self.twilio, callbackBaseURL: Self.base) } == nil)
        let noJob = Self.twilioRequest(fields, query: nil)
        #expect(
            Self.refusal { try ProviderReceipt.twilio(noJob, account: Self.twilio, callbackBaseURL: Self.base) }
                == .invalid("the callback URL carries no job (?job=)"))
        #expect(Self.refusal { try ProviderReceipt.twilio(good, account: Self.twilio, callbackBaseURL: nil) } == .notFound, "receipts off")
    }

    // MARK: Vonage

    static let badSig = ProviderReceipt.Refusal.unauthenticated("sig does not match, or its timestamp is not within 5 minutes")
    static let badEd25519 = ProviderReceipt.Refusal.unauthenticated("the signature does not match, or its timestamp is not within 300 s")

    static let vonage = SMSProviderSettings.Vonage(
        apiKey: "k", apiSecret: "s", signatureSecret: "sigsecret", signatureMethod: .sha256, receiptToken: "0123456789abcdef")

    static func vonageFields(_ status: String, segment: String = "0A1", at time: Date = now, sign: Bool = true) -> [String: String] {
        var fields = ["msisdn": "447700900123", "status": status, "messageId": segment, "client-ref": job.lowercasedText, "err-code": "0"]
        if sign {
            fields["timestamp"] = String(Int(time.timeIntervalSince1970))
            fields["sig"] = VonageSignature.sign(fields, secret: "sigsecret", method: .sha256)
        }
        return fields
    }

    @Test("Vonage: a signed receipt by GET, form or JSON names its segment; a stale or bad sig is refused; the token path takes unsigned ones")
    func vonage() throws {
        let fields = Self.vonageFields("delivered")
        let encoded = FormEncoding.encode(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        let json = try JSONSerialization.data(withJSONObject: fields)
        for request in [
            Request(method: "GET", path: "/callbacks/sms/vonage", query: encoded, headers: [:], body: Data()),
            Request(method: "POST", path: "/callbacks/sms/vonage", query: nil, headers: [:], body: Data(encoded.utf8)),
            Request(method: "POST", path: "/callbacks/sms/vonage", query: nil, headers: [:], body: json),
        ] {
            #expect(
                try ProviderReceipt.vonage(request, account: Self.vonage, token: nil, now: Self.now)
                    == ProviderReceipt(jobID: Self.job, status: .delivered, segment: "0A1", messageID: "0A1"))
        }
        func form(_ fields: [String: String]) -> Request {
            Request(
                method: "POST", path: "/callbacks/sms/vonage", query: nil, headers: [:],
                body: Data(FormEncoding.encode(fields.map { ($0.key, $0.value) }).utf8))
        }
        let stale = form(Self.vonageFields("delivered", at: Self.now.addingTimeInterval(-301)))
        #expect(Self.refusal { try ProviderReceipt.vonage(stale, account: Self.vonage, token: nil, now: Self.now) } == Self.badSig)
        var forged = Self.vonageFields("delivered")
        forged["status"] = "failed"
        #expect(Self.refusal { try ProviderReceipt.vonage(form(forged), account: Self.vonage, token: nil, now: Self.now) } == Self.badSig)
        let unsigned = form(Self.vonageFields("failed", sign: false))
        #expect(
            Self.refusal { try ProviderReceipt.vonage(unsigned, account: Self.vonage, token: nil, now: Self.now) }
                == .unauthenticated("sig is missing"))
        #expect(try ProviderReceipt.vonage(unsigned, account: Self.vonage, token: "0123456789abcdef", now: Self.now).status == .undelivered)
        #expect(Self.refusal { try ProviderReceipt.vonage(unsigned, account: Self.vonage, token: "0123456789abcdeX", now: Self.now) } == .notFound)
        #expect(try ProviderReceipt.vonage(form(Self.vonageFields("accepted")), account: Self.vonage, token: nil, now: Self.now).status == nil)
    }

    // MARK: Telnyx

    @Test("Telnyx: a finalized event under the key within 300 s; the job from the signed body's webhook_url, never the request's query")
    func telnyx() throws {
        let key = Curve25519.Signing.PrivateKey()
        let account = SMSProviderSettings.Telnyx(apiKey: "k", publicKey: key.publicKey.rawRepresentation)
        func request(
            _ event: String, _ status: String, code: String? = nil, at time: Date = ProviderReceiptTests.now,
            signer: Curve25519.Signing.PrivateKey? = nil
        )
            throws -> Request
        {
            let errors: [[String: Any]] = code.map { [["code": $0]] } ?? []
            let body = try JSONSerialization.data(withJSONObject: [
                "data": [
                    "event_type": event,
                    "payload": [
                        "id": "msg-1", "to": [["phone_number": "+447700900123", "status": status]], "errors": errors,
                        "webhook_url": "\(Self.base)/callbacks/sms/telnyx?job=\(Self.job.lowercasedText)",
                    ],
                ]
            ])
            let timestamp = String(Int(time.timeIntervalSince1970))
            let signature = try TelnyxSignature.sign(timestamp: timestamp, body: body, privateKey: signer ?? key)
            return Request(
                method: "POST", path: "/callbacks/sms/telnyx", query: "job=\(UUID().uuidString)",
                headers: ["telnyx-signature-ed25519": signature, "telnyx-timestamp": timestamp], body: body)
        }
        #expect(
            try ProviderReceipt.telnyx(request("message.finalized", "delivered"), account: account, now: Self.now)
                == ProviderReceipt(jobID: Self.job, status: .delivered, messageID: "msg-1"))
        #expect(
            try ProviderReceipt.telnyx(request("message.finalized", "delivery_failed", code: "40003"), account: account, now: Self.now).status
                == .failed)
        #expect(
            try ProviderReceipt.telnyx(request("message.finalized", "delivery_failed", code: "40008"), account: account, now: Self.now).status
                == .undelivered)
        #expect(try ProviderReceipt.telnyx(request("message.sent", "sent"), account: account, now: Self.now).status == nil)
        let stale = try request("message.finalized", "delivered", at: Self.now.addingTimeInterval(-301))
        #expect(Self.refusal { try ProviderReceipt.telnyx(stale, account: account, now: Self.now) } == Self.badEd25519)
        let other = try request("message.finalized", "delivered", signer: Curve25519.Signing.PrivateKey())
        #expect(Self.refusal { try ProviderReceipt.telnyx(other, account: account, now: Self.now) } == Self.badEd25519)
        let keyless = SMSProviderSettings.Telnyx(apiKey: "k")
        #expect(Self.refusal { try ProviderReceipt.telnyx(other, account: keyless, now: Self.now) } == .notFound)
    }
}
