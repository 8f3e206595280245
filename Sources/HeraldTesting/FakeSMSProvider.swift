import Crypto
import Foundation
import HeraldCore
import HeraldCurl
import Logging
import Synchronization

/// Twilio, Vonage or Telnyx on 127.0.0.1, speaking the provider's own wire: its request format and
/// authentication, its success answer (Twilio's 201 with string-typed numbers, Vonage's 200 with one
/// entry per segment, Telnyx's `data`), its error shapes and codes, and its signed receipts, sent to
/// the callback URL each message named. Behaviour is scripted per number and per time window; every
/// request is recorded on arrival (`FakeSMSGateway` underneath).
public final class FakeSMSProvider: Sendable {
    public enum Dialect: Sendable {
        case twilio(accountSid: String, authToken: String)
        case vonage(apiKey: String, apiSecret: String, signatureSecret: String, method: VonageSignature.Method)
        case telnyx(apiKey: String, signingKey: Curve25519.Signing.PrivateKey)
    }

    /// How the provider answers a send.
    public enum Behaviour: Sendable, Equatable {
        case accept
        /// Refuses with the provider's own code (`21211`, `"7"`, `"40001"`), in the HTTP status the
        /// provider uses for it.
        case refuse(code: String)
        /// Answers this HTTP status with a provider-shaped error body (an outage: 500, 503).
        case status(Int)
        /// Vonage: the first segment sent, the second refused (`status` 7).
        case partial
        /// Takes the request and answers only after `delay` (a client's timeout makes it uncertain).
        case silent(delay: Duration)
    }

    /// A message the provider accepted.
    public struct Message: Sendable, Equatable {
        public var id: String
        public var to: String
        public var from: String?
        public var text: String
        /// Where its receipts go, as the request named it.
        public var callbackURL: String?
        /// Vonage's `client-ref`.
        public var clientRef: String?
        /// One id per segment (Vonage reports each).
        public var segmentIDs: [String]
        /// When the provider took it.
        public var acceptedAt = Date()

        /// The Herald job it carries: Vonage's `client-ref`, else the `job` in its callback URL.
        public var jobID: String? {
            if let clientRef, clientRef.isEmpty == false { return clientRef }
            return callbackURL.flatMap { URLComponents(string: $0)?.queryItems?.first { $0.name == "job" }?.value }
        }
    }

    struct Rule {
        var number: String?
        var until: Date?
        var behaviour: Behaviour
    }

    struct State {
        var rules: [Rule] = []
        var accepted: [Message] = []
    }

    public let dialect: Dialect
    let gateway: FakeSMSGateway
    let state = Mutex(State())
    let client = CurlClient(logger: Logger(label: "fake-provider"))

    init(dialect: Dialect, gateway: FakeSMSGateway) {
        self.dialect = dialect
        self.gateway = gateway
    }

    public static func start(_ dialect: Dialect) async throws -> FakeSMSProvider {
        let provider = FakeSMSProvider(dialect: dialect, gateway: try await FakeSMSGateway.start())
        provider.gateway.respond { [weak provider] received in provider?.answer(received) ?? FakeSMSGateway.Reply(status: 503) }
        return provider
    }

    /// `http://127.0.0.1:<port>`: the `baseUrl` to configure.
    public var baseURL: String { "http://127.0.0.1:\(gateway.port)" }

    /// From now on (until `until`, when given) sends to `number` (nil: every number) get `behaviour`;
    /// the latest matching rule wins.
    public func behave(_ behaviour: Behaviour, for number: String? = nil, until: Date? = nil) {
        state.withLock { $0.rules.append(Rule(number: number, until: until, behaviour: behaviour)) }
    }

    /// Every request, in arrival order.
    public var received: [FakeSMSGateway.Received] { gateway.received }
    public var receivedCount: Int { gateway.receivedCount }
    /// Messages accepted, in order.
    public var accepted: [Message] { state.withLock { $0.accepted } }

    public func stop() async { await gateway.stop() }

    // MARK: answering a send

    func behaviour(for number: String, now: Date) -> Behaviour {
        state.withLock { state in
            state.rules.last { ($0.number == nil || $0.number == number) && ($0.until.map { now < $0 } ?? true) }?.behaviour ?? .accept
        }
    }

    func answer(_ request: FakeSMSGateway.Received) -> FakeSMSGateway.Reply {
        switch dialect {
        case .twilio(let sid, let token): twilio(request, sid: sid, token: token)
        case .vonage(let key, let secret, let signatureSecret, let method):
            vonage(request, key: key, secret: secret, signatureSecret: signatureSecret, method: method)
        case .telnyx(let key, _): telnyx(request, key: key)
        }
    }

    static func json(_ status: Int, _ object: [String: Any], delay: Duration = .zero) -> FakeSMSGateway.Reply {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return FakeSMSGateway.Reply(status: status, body: body, delay: delay)
    }

    static func form(_ body: Data) -> [String: String] { FormEncoding.decode(String(decoding: body, as: UTF8.self)) }

    static func hex(_ count: Int) -> String { (0..<count).map { _ in String(format: "%x", Int.random(in: 0..<16)) }.joined() }

    /// Segments as a provider counts them: 160/153 GSM-7 characters, 70/67 otherwise.
    static func segments(_ text: String) -> Int {
        let gsm = SMSSegments(text).encoding == .gsm7
        let (single, part) = gsm ? (160, 153) : (70, 67)
        let count = text.count
        return count <= single ? 1 : (count + part - 1) / part
    }

    private func twilio(_ request: FakeSMSGateway.Received, sid: String, token: String) -> FakeSMSGateway.Reply {
        let path = request.uri.prefix { $0 != "?" }
        guard path == "/2010-04-01/Accounts/\(sid)/Messages.json" else {
            return Self.json(404, ["code": 20404, "message": "The requested resource was not found", "status": 404])
        }
        let expected = "Basic " + Data("\(sid):\(token)".utf8).base64EncodedString()
        guard request.headers["authorization"] == expected else {
            return Self.json(401, ["code": 20003, "message": "Authenticate", "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401])
        }
        let form = Self.form(request.body)
        guard let to = form["To"], let body = form["Body"], form["From"] != nil || form["MessagingServiceSid"] != nil else {
            return Self.json(400, ["code": 21604, "message": "A 'To' phone number, a 'From' and a 'Body' are required.", "status": 400])
        }
        switch behaviour(for: to, now: Date()) {
        case .accept, .partial:
            let id = "SM" + Self.hex(32)
            let message = Message(
                id: id, to: to, from: form["From"], text: body, callbackURL: form["StatusCallback"], clientRef: nil, segmentIDs: [id])
            state.withLock { $0.accepted.append(message) }
            return Self.json(
                201,
                [
                    "sid": id, "account_sid": sid, "to": to, "from": form["From"].map { $0 as Any } ?? NSNull(), "body": body, "status": "queued",
                    "num_segments": String(Self.segments(body)), "num_media": "0", "direction": "outbound-api", "api_version": "2010-04-01",
                    "price": NSNull(), "price_unit": "USD", "error_code": NSNull(), "error_message": NSNull(),
                    "messaging_service_sid": form["MessagingServiceSid"].map { $0 as Any } ?? NSNull(),
                ])
        case .refuse(let code):
            let status = code == "20429" ? 429 : code == "20003" ? 401 : 400
            return Self.json(
                status,
                ["code": Int(code) ?? 0, "message": "Refused (\(code))", "more_info": "https://www.twilio.com/docs/errors/\(code)", "status": status])
        case .status(let status):
            return Self.json(status, ["code": 20500, "message": "Internal Server Error", "status": status])
        case .silent(let delay):
            return Self.json(201, [:], delay: delay)
        }
    }

    private func vonage(
        _ request: FakeSMSGateway.Received, key: String, secret: String, signatureSecret: String, method: VonageSignature.Method
    ) -> FakeSMSGateway.Reply {
        guard request.uri.prefix(while: { $0 != "?" }) == "/sms/json" else { return FakeSMSGateway.Reply(status: 404, body: "") }
        let form = Self.form(request.body)
        func refusal(_ status: String, _ text: String) -> FakeSMSGateway.Reply {
            Self.json(200, ["message-count": "1", "messages": [["status": status, "error-text": text]]])
        }
        guard form["api_key"] == key else { return refusal("4", "Bad Credentials") }
        if form["sig"] != nil {
            guard form["api_secret"] == nil else { return refusal("32", "Signature and API secret both sent") }
            guard VonageSignature.isValid(form, secret: signatureSecret, method: method, now: Date()) else {
                return refusal("14", "Invalid Signature")
            }
        } else if form["api_secret"] != secret {
            return refusal("4", "Bad Credentials")
        }
        guard let to = form["to"], let text = form["text"], let from = form["from"] else { return refusal("2", "Missing to param") }
        guard to.allSatisfy(\.isNumber), (7...15).contains(to.count) else { return refusal("3", "Invalid to param") }
        switch behaviour(for: "+" + to, now: Date()) {
        case .accept, .partial:
            let count = Self.segments(text)
            let ids = (0..<count).map { _ in Self.hex(16).uppercased() }
            let partial = behaviour(for: "+" + to, now: Date()) == .partial && count > 1
            let entries: [[String: Any]] = ids.enumerated().map { index, id in
                if partial, index > 0 { return ["status": "7", "error-text": "Number barred"] }
                return [
                    "to": to, "message-id": id, "status": "0", "remaining-balance": "3.14", "message-price": "0.03330000", "network": "23410",
                    "client-ref": form["client-ref"] ?? "",
                ]
            }
            let message = Message(
                id: ids[0], to: "+" + to, from: from, text: text, callbackURL: form["callback"], clientRef: form["client-ref"],
                segmentIDs: partial ? [ids[0]] : ids)
            state.withLock { $0.accepted.append(message) }
            return Self.json(200, ["message-count": String(count), "messages": entries])
        case .refuse(let code):
            return refusal(code, "Refused (\(code))")
        case .status(let status):
            return FakeSMSGateway.Reply(status: status, body: "")
        case .silent(let delay):
            return Self.json(200, [:], delay: delay)
        }
    }

    private func telnyx(_ request: FakeSMSGateway.Received, key: String) -> FakeSMSGateway.Reply {
        func errors(_ status: Int, _ code: String, _ title: String) -> FakeSMSGateway.Reply {
            Self.json(status, ["errors": [["code": code, "title": title, "detail": title]]])
        }
        guard request.uri.prefix(while: { $0 != "?" }) == "/v2/messages" else { return errors(404, "10005", "Resource not found") }
        guard request.headers["authorization"] == "Bearer \(key)" else { return errors(401, "10009", "Authentication failed") }
        guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any], let to = object["to"] as? String,
            let text = object["text"] as? String
        else { return errors(422, "10015", "Invalid request body") }
        guard to.hasPrefix("+") else { return errors(400, "10016", "Phone number must be in +E.164 format") }
        switch behaviour(for: to, now: Date()) {
        case .accept, .partial:
            let id = UUID().uuidString.lowercased()
            let webhook = object["webhook_url"] as? String
            let message = Message(
                id: id, to: to, from: object["from"] as? String, text: text, callbackURL: webhook, clientRef: nil, segmentIDs: [id])
            state.withLock { $0.accepted.append(message) }
            return Self.json(
                200,
                [
                    "data": [
                        "record_type": "message", "direction": "outbound", "id": id, "type": "SMS", "text": text,
                        "from": ["phone_number": object["from"] ?? NSNull()], "to": [["phone_number": to, "status": "queued"]],
                        "parts": Self.segments(text), "cost": ["amount": "0.0051", "currency": "USD"],
                        "webhook_url": webhook.map { $0 as Any } ?? NSNull(),
                        "encoding": SMSSegments(text).encoding == .gsm7 ? "GSM-7" : "UCS-2",
                    ]
                ])
        case .refuse(let code):
            return errors(code == "10011" ? 429 : code == "10009" ? 401 : 400, code, "Refused (\(code))")
        case .status(let status):
            return errors(status, "10007", "Unexpected error")
        case .silent(let delay):
            return Self.json(200, [:], delay: delay)
        }
    }

    // MARK: receipts

    /// What a receipt says.
    public enum ReceiptStatus: Sendable {
        case delivered
        /// Undelivered, with the provider's error code (Twilio 30450 is a fraud block).
        case failed(code: String)
        /// An interim status (Twilio `sent`, Vonage `accepted`, Telnyx `message.sent`).
        case interim
    }

    /// How the receipt is signed.
    public enum Signing: Sendable {
        case good
        /// Signed with another key.
        case wrong
        case missing
        /// Signed, but with a timestamp this many seconds in the past (Vonage, Telnyx).
        case stale(seconds: Int)
    }

    /// How Vonage sends it.
    public enum VonageForm: Sendable {
        case query, form, json
    }

    /// Sends the receipt for `message` (its `segment`-th segment at Vonage) to its callback URL as the
    /// provider does; returns the HTTP status Herald answered.
    @discardableResult
    public func sendReceipt(
        for message: Message, _ status: ReceiptStatus, signing: Signing = .good, segment: Int = 0, vonage form: VonageForm = .form,
        url override: String? = nil
    ) async throws -> Int {
        guard let url = override ?? message.callbackURL else { throw TestFailure("message \(message.id) named no callback URL") }
        var request: CurlHTTPRequest
        switch dialect {
        case .twilio(let sid, let token):
            var fields: [(name: String, value: String)] = [
                ("MessageSid", message.id), ("SmsSid", message.id), ("AccountSid", sid), ("To", message.to), ("From", message.from ?? ""),
                ("ApiVersion", "2010-04-01"),
            ]
            let state =
                switch status {
                case .delivered: "delivered"
                case .failed: "undelivered"
                case .interim: "sent"
                }
            fields += [("MessageStatus", state), ("SmsStatus", state)]
            if case .failed(let code) = status { fields.append(("ErrorCode", code)) }
            if case .delivered = status { fields.append(("RawDlrDoneDate", "2512031200")) }
            var headers: [(name: String, value: String)] = [("Content-Type", "application/x-www-form-urlencoded")]
            switch signing {
            case .good, .stale: headers.append(("X-Twilio-Signature", TwilioSignature.sign(url: url, parameters: fields, authToken: token)))
            case .wrong: headers.append(("X-Twilio-Signature", TwilioSignature.sign(url: url, parameters: fields, authToken: token + "x")))
            case .missing: break
            }
            request = CurlHTTPRequest(url: url, headers: headers, body: Data(FormEncoding.encode(fields).utf8))
        case .vonage(let key, _, let signatureSecret, let method):
            var fields = [
                "msisdn": String(message.to.dropFirst()), "to": message.from ?? "", "network-code": "23410",
                "messageId": message.segmentIDs[min(segment, message.segmentIDs.count - 1)], "price": "0.03330000", "scts": "2512031200",
                "api-key": key, "client-ref": message.clientRef ?? "", "message-timestamp": "2026-12-03 12:00:00",
            ]
            switch status {
            case .delivered: (fields["status"], fields["err-code"]) = ("delivered", "0")
            case .failed(let code): (fields["status"], fields["err-code"]) = ("failed", code)
            case .interim: (fields["status"], fields["err-code"]) = ("accepted", "0")
            }
            let age: Int = if case .stale(let seconds) = signing { seconds } else { 0 }
            if case .missing = signing {
            } else {
                fields["timestamp"] = String(Int(Date().timeIntervalSince1970) - age)
                fields["nonce"] = UUID().uuidString
                let secret = if case .wrong = signing { signatureSecret + "x" } else { signatureSecret }
                fields["sig"] = VonageSignature.sign(fields, secret: secret, method: method)
            }
            let encoded = FormEncoding.encode(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            switch form {
            case .query:
                request = CurlHTTPRequest(method: "GET", url: url + (url.contains("?") ? "&" : "?") + encoded)
            case .form:
                request = CurlHTTPRequest(url: url, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Data(encoded.utf8))
            case .json:
                let body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
                request = CurlHTTPRequest(url: url, headers: [("Content-Type", "application/json")], body: body)
            }
        case .telnyx(_, let signingKey):
            let final: String
            var errors: [[String: Any]] = []
            switch status {
            case .delivered: final = "delivered"
            case .failed(let code):
                final = "delivery_failed"
                errors = [["code": code, "title": "Delivery failed (\(code))"]]
            case .interim: final = "sent"
            }
            let event: [String: Any] = [
                "data": [
                    "event_type": status.isInterim ? "message.sent" : "message.finalized", "id": UUID().uuidString.lowercased(),
                    "occurred_at": "2026-12-03T12:00:00.000+00:00", "record_type": "event",
                    "payload": [
                        "id": message.id, "to": [["phone_number": message.to, "status": final]], "errors": errors,
                        "webhook_url": message.callbackURL.map { $0 as Any } ?? NSNull(), "completed_at": "2026-12-03T12:00:00.000+00:00",
                    ],
                ],
                "meta": ["attempt": 1, "delivered_to": url],
            ]
            let body = try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])
            let age: Int = if case .stale(let seconds) = signing { seconds } else { 0 }
            let timestamp = String(Int(Date().timeIntervalSince1970) - age)
            var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("telnyx-timestamp", timestamp)]
            switch signing {
            case .good, .stale:
                headers.append(("telnyx-signature-ed25519", try TelnyxSignature.sign(timestamp: timestamp, body: body, privateKey: signingKey)))
            case .wrong:
                let other = Curve25519.Signing.PrivateKey()
                headers.append(("telnyx-signature-ed25519", try TelnyxSignature.sign(timestamp: timestamp, body: body, privateKey: other)))
            case .missing: break
            }
            request = CurlHTTPRequest(url: url, headers: headers, body: body)
        }
        request.timeout = .seconds(10)
        return try await client.perform(request).status
    }
}

extension FakeSMSProvider.ReceiptStatus {
    var isInterim: Bool { if case .interim = self { true } else { false } }
}
