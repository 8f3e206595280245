import Foundation
import HeraldCore
import HeraldCurl
import Logging
import Testing

@testable import HeraldChannels

/// What each provider adapter sends, and how each class of the provider's documented answers maps to
/// an outcome, without a server (the fakes check the same over the wire).
@Suite("SMS provider adapters: requests and answers")
struct ProviderAdapterTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let jobID = UUID(uuidString: "0190a5a4-1111-7000-8000-000000000001")!
    static let client = CurlClient(logger: Logger(label: "adapter-test"))
    static let sid = "AC" + String(repeating: "a1", count: 16)

    static func message(body: String = "Your code is 482913", region: String = "GB", expiresIn: Double = 300) -> OutgoingSMS {
        OutgoingSMS(
            jobID: jobID, project: "p1", to: "+447700900123", region: region, body: body, expiresAt: now.addingTimeInterval(expiresIn), now: now)
    }

    static func provider(_ name: String, _ account: SMSProviderSettings.Account, senders: SMSProviderSettings.Senders) -> SMSProviderSettings {
        SMSProviderSettings(
            name: name, account: account, baseURL: "https://api.example", rate: nil, maxInFlight: 10, timeout: .seconds(5), senders: senders,
            breaker: .init())
    }

    static func form(_ request: CurlHTTPRequest?) -> [String: String] {
        FormEncoding.decode(String(decoding: request?.body ?? Data(), as: UTF8.self))
    }

    static func header(_ request: CurlHTTPRequest?, _ name: String) -> String? {
        request?.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    // MARK: Twilio

    static func twilio(apiKey: (String, String)? = nil, service: String? = nil, callbacks: Bool = true) -> TwilioChannel {
        let account = SMSProviderSettings.Twilio(accountSid: sid, authToken: "token", apiKey: apiKey, messagingServiceSid: service)
        return TwilioChannel(
            client: client, provider: provider("twilio", .twilio(account), senders: .init(byRegion: ["GB": "Herald"], fallback: "+15005550006")),
            account: account, callbackBaseURL: callbacks ? "https://herald.example.com" : nil)
    }

    @Test("Twilio: a form POST under basic auth with To, From for the region, Body, the code's life and the job's callback")
    func twilioRequest() throws {
        let request = try #require(Self.twilio().request(for: Self.message()))
        #expect(request.url == "https://api.example/2010-04-01/Accounts/\(Self.sid)/Messages.json")
        #expect(Self.header(request, "Authorization") == "Basic " + Data("\(Self.sid):token".utf8).base64EncodedString())
        #expect(
            Self.form(request) == [
                "To": "+447700900123", "From": "Herald", "Body": "Your code is 482913", "ValidityPeriod": "300",
                "StatusCallback": "https://herald.example.com/callbacks/sms/twilio?job=\(Self.jobID.lowercasedText)",
            ])
        let keyed = try #require(
            Self.twilio(apiKey: ("SKkey", "keysecret"), service: "MG1", callbacks: false).request(for: Self.message(region: "US")))
        #expect(Self.header(keyed, "Authorization") == "Basic " + Data("SKkey:keysecret".utf8).base64EncodedString())
        #expect(Self.form(keyed)["MessagingServiceSid"] == "MG1" && Self.form(keyed)["From"] == nil && Self.form(keyed)["StatusCallback"] == nil)
        let long = try #require(Self.twilio().request(for: Self.message(expiresIn: 86_400)))
        #expect(Self.form(long)["ValidityPeriod"] == "14400", "Twilio's ceiling")
    }

    @Test("Twilio: 201 is sent with the SID and the price it charged; each class of error code maps to its outcome")
    func twilioAnswers() {
        let created = #"{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued","num_segments":"1","price":"-0.00750","price_unit":"USD"}"#
        let sent = TwilioChannel.report(status: 201, retryAfter: nil, body: Data(created.utf8))
        #expect(sent.outcome == .sent(reference: "SM0123456789abcdef0123456789abcdef"))
        #expect(sent.price == ProviderPrice(amount: "0.00750", currency: "USD"))
        func outcome(_ status: Int, _ code: Int?) -> DeliveryOutcome {
            let body = code.map { #"{"code":\#($0),"message":"Your code is 482913 refused","more_info":"x","status":\#(status)}"# } ?? "<html>"
            return TwilioChannel.report(status: status, retryAfter: .seconds(2), body: Data(body.utf8), sent: Self.message()).outcome
        }
        #expect(outcome(429, 20429) == .retryable(reason: "Twilio 20429: [message] refused", retryAfter: .seconds(2), code: "20429"))
        for code in [21211, 21610, 21614, 30006] {
            guard case .permanent(_, let label) = outcome(400, code) else { return #expect(Bool(false), "\(code)") }
            #expect(label == String(code))
        }
        for code in [30450, 30453] { #expect(outcome(400, code) == .blocked(reason: "Twilio \(code): [message] refused", code: String(code))) }
        for (status, code) in [(401, 20003), (400, 30002), (400, 21408), (400, 30410), (400, 21606), (500, 20500)] {
            guard case .providerFailure(_, let label) = outcome(status, code) else { return #expect(Bool(false), "\(code)") }
            #expect(label == String(code))
        }
        #expect(outcome(503, nil) == .providerFailure(reason: "Twilio http_503: HTTP 503", code: "http_503"))
        #expect(outcome(429, nil) == .retryable(reason: "Twilio http_429: HTTP 429", retryAfter: .seconds(2), code: "http_429"))
    }

    // MARK: Vonage

    static func vonage(signed: Bool, token: String? = nil) -> VonageChannel {
        let account = SMSProviderSettings.Vonage(
            apiKey: "key", apiSecret: signed ? nil : "secret", signatureSecret: signed ? "sigsecret" : nil, signatureMethod: .md5hash,
            receiptToken: token)
        return VonageChannel(
            client: client, provider: provider("vonage", .vonage(account), senders: .init(fallback: "Herald")), account: account,
            callbackBaseURL: "https://herald.example.com", clock: { ProviderAdapterTests.now })
    }

    @Test("Vonage: to without +, text type for GSM-7 (é, ß and £ too), unicode only for UCS-2, ttl never below 20 s, the job as client-ref")
    func vonageRequest() throws {
        let plain = Self.form(Self.vonage(signed: false, token: "0123456789abcdef").request(for: Self.message(body: "Code 482913: é ß £")))
        #expect(plain["to"] == "447700900123" && plain["type"] == "text" && plain["ttl"] == "300000")
        #expect(plain["api_key"] == "key" && plain["api_secret"] == "secret" && plain["sig"] == nil)
        #expect(plain["client-ref"] == Self.jobID.lowercasedText)
        #expect(plain["callback"] == "https://herald.example.com/callbacks/sms/vonage/0123456789abcdef" && plain["status-report-req"] == "1")
        let unicode = Self.form(Self.vonage(signed: false).request(for: Self.message(body: "Код 482913", expiresIn: 5)))
        #expect(unicode["type"] == "unicode" && unicode["ttl"] == "20000")
        #expect(unicode["callback"] == nil, "no signature secret and no token: no receipts are asked for")
        let signed = Self.form(Self.vonage(signed: true).request(for: Self.message()))
        #expect(signed["api_secret"] == nil && signed["timestamp"] == "1800000000")
        #expect(signed["sig"] == VonageSignature.sign(signed, secret: "sigsecret", method: .md5hash))
        #expect(signed["callback"] == "https://herald.example.com/callbacks/sms/vonage")
    }

    @Test("Vonage: every segment's status decides; some sent and some refused is uncertain; each status class maps to its outcome")
    func vonageAnswers() {
        func body(_ statuses: [String]) -> Data {
            let entries = statuses.map { status in
                status == "0"
                    ? #"{"to":"447700900123","message-id":"0A0000000123ABCD\#(status)","status":"0","message-price":"0.03330000","network":"23410"}"#
                    : #"{"status":"\#(status)","error-text":"Refused: Your code is 482913"}"#
            }
            return Data(#"{"message-count":"\#(statuses.count)","messages":[\#(entries.joined(separator: ","))]}"#.utf8)
        }
        let sent = VonageChannel.report(status: 200, retryAfter: nil, body: body(["0", "0"]))
        #expect(sent.outcome == .sent(reference: "0A0000000123ABCD0"))
        #expect(sent.price == ProviderPrice(amount: "0.0666", currency: "EUR"))
        func outcome(_ statuses: [String]) -> DeliveryOutcome {
            VonageChannel.report(status: 200, retryAfter: nil, body: body(statuses), sent: Self.message()).outcome
        }
        #expect(outcome(["1"]) == .retryable(reason: "Vonage status 1: Refused: [message]", retryAfter: nil, code: "1"))
        for status in ["6", "7", "33"] {
            guard case .permanent(_, status) = outcome([status]) else { return #expect(Bool(false), "\(status)") }
        }
        for status in ["4", "5", "8", "9", "14", "15", "29"] {
            guard case .providerFailure(_, status) = outcome([status]) else { return #expect(Bool(false), "\(status)") }
        }
        guard case .uncertain(let reason, "7") = outcome(["0", "7"]) else { return #expect(Bool(false), "partial") }
        #expect(reason.hasPrefix("Vonage sent 1 of 2 segments"))
        #expect(
            VonageChannel.report(status: 503, retryAfter: nil, body: Data()).outcome
                == .providerFailure(reason: "Vonage answered HTTP 503", code: "http_503"))
    }

    // MARK: Telnyx

    static func telnyx(profile: String? = nil, publicKey: Data? = Data(repeating: 1, count: 32)) -> TelnyxChannel {
        let account = SMSProviderSettings.Telnyx(apiKey: "KEY0123", messagingProfileId: profile, publicKey: publicKey)
        return TelnyxChannel(
            client: client, provider: provider("telnyx", .telnyx(account), senders: .init(fallback: "+15005550006")), account: account,
            callbackBaseURL: "https://herald.example.com")
    }

    @Test("Telnyx: a JSON POST under the bearer key with from, to, text, the profile and the job's webhook")
    func telnyxRequest() throws {
        let request = try #require(Self.telnyx(profile: "prof-1").request(for: Self.message()))
        #expect(request.url == "https://api.example/v2/messages" && Self.header(request, "Authorization") == "Bearer KEY0123")
        let json = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: String])
        #expect(
            json == [
                "from": "+15005550006", "to": "+447700900123", "text": "Your code is 482913", "type": "SMS", "messaging_profile_id": "prof-1",
                "webhook_url": "https://herald.example.com/callbacks/sms/telnyx?job=\(Self.jobID.lowercasedText)",
            ])
        let unsigned = try #require(Self.telnyx(publicKey: nil).request(for: Self.message()))
        #expect(
            try JSONSerialization.jsonObject(with: unsigned.body ?? Data()) as? [String: String]
                == json.filter { $0.key != "webhook_url" && $0.key != "messaging_profile_id" })
    }

    @Test("Telnyx: 200 is sent with the id and cost; the errors array's first code decides the rest")
    func telnyxAnswers() {
        let ok = #"{"data":{"id":"40385f64-5717-4562-b3fc-2c963f66afa6","parts":1,"cost":{"amount":"0.0051","currency":"USD"}}}"#
        let sent = TelnyxChannel.report(status: 200, retryAfter: nil, body: Data(ok.utf8))
        #expect(sent.outcome == .sent(reference: "40385f64-5717-4562-b3fc-2c963f66afa6"))
        #expect(sent.price == ProviderPrice(amount: "0.0051", currency: "USD"))
        func outcome(_ status: Int, _ code: String) -> DeliveryOutcome {
            let body = #"{"errors":[{"code":"\#(code)","title":"t","detail":"Refused: Your code is 482913"}]}"#
            return TelnyxChannel.report(status: status, retryAfter: nil, body: Data(body.utf8), sent: Self.message()).outcome
        }
        #expect(outcome(400, "40002") == .blocked(reason: "Telnyx 40002: Refused: [message]", code: "40002"))
        #expect(outcome(429, "10011") == .retryable(reason: "Telnyx 10011: Refused: [message]", retryAfter: nil, code: "10011"))
        for code in ["10016", "40001", "40300"] {
            guard case .permanent(_, code) = outcome(400, code) else { return #expect(Bool(false), "\(code)") }
        }
        guard case .providerFailure(_, "10009") = outcome(401, "10009") else { return #expect(Bool(false), "auth") }
        #expect(
            TelnyxChannel.report(status: 502, retryAfter: nil, body: Data()).outcome
                == .providerFailure(reason: "Telnyx http_502: HTTP 502", code: "http_502"))
    }
}
