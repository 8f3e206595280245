import Foundation
import HeraldCore
import Testing

@Suite("Job schema, retry policy, templates, durations")
struct JobAndPolicyTests {
    @Test("a job round-trips through its JSON body")
    func jobRoundTrip() throws {
        let job = Job(
            project: "demo-project", createdAt: Date(timeIntervalSince1970: 1_800_000_000.125),
            expiresAt: Date(timeIntervalSince1970: 1_800_000_300.5), locale: "de",
            payload: .sms(SMSMessage(to: "+15555550100", template: .verification, params: ["codeSealed": "abc=", "app": "Demo"])))
        let body = JobCodec.encode(job)
        let decoded = try JobCodec.decode(body)
        #expect(decoded == job)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(object["type"] as? String == "sms")
        #expect(object["id"] as? String == job.id.uuidString.lowercased())
        #expect(object["createdAt"] as? String == "2027-01-15T08:00:00.125Z")
        #expect(object["idempotencyKey"] as? String == job.id.uuidString.lowercased())
    }

    @Test("the hand-written body is the JSON Foundation reads back: sorted keys, every escape, any text")
    func bodyIsJSON() throws {
        var generator = SystemRandomNumberGenerator()
        // Quotes, backslashes, every control character, slashes, non-ASCII and astral characters.
        let awkward = ["\"", "\\", "/", "é", "日本", "🙂", "a\u{0}b"] + (0..<32).map { String(UnicodeScalar(UInt8($0))) }
        for round in 0..<200 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in awkward.randomElement(using: &generator)! }.joined()
            let job = Job(
                project: "p\(text)", createdAt: Date(timeIntervalSince1970: 1_800_000_000), expiresAt: Date(timeIntervalSince1970: 1_800_000_300),
                locale: round.isMultiple(of: 2) ? nil : text,
                payload: .sms(SMSMessage(to: "+15555550100", template: .text, params: ["text": text, "z\(text)": "1", "a": text])))
            let body = JobCodec.encode(job)
            let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any], "\(String(decoding: body, as: UTF8.self))")
            #expect(object["project"] as? String == job.project)
            #expect(object["locale"] as? String == job.locale)
            #expect(object.keys.contains("locale") == (job.locale != nil))
            #expect(object["params"] as? [String: String] == ["text": text, "z\(text)": "1", "a": text])
            #expect(try JobCodec.decode(body) == job)
            // Keys in order, so the same job always has the same bytes.
            let keys = try #require(String(decoding: body, as: UTF8.self).split(separator: ",").first)
            #expect(keys.hasPrefix(#"{"createdAt""#))
        }
    }

    @Test("every job type's body lists its keys in order (the same job always has the same bytes) and reads back")
    func keysInOrder() throws {
        let created = Date(timeIntervalSince1970: 1_800_000_000)
        let payloads: [Job.Payload] = [
            .sms(SMSMessage(to: "+15555550100", template: .verification, params: ["codeSealed": "abc=", "app": "Demo"])),
            .email(EmailMessage(to: "a@example.com", template: .signInLink, params: ["linkSealed": "x", "app": "Demo"])),
            .push(
                PushMessage(
                    deviceToken: String(repeating: "ab", count: 32), environment: .sandbox, topic: "com.example.app", payload: ["receiptSealed": "y"])
            ),
            .apple(AppleMessage(user: "u1", clientId: "com.example.app", redirectUri: "https://example.com/cb", params: ["refreshTokenSealed": "z"])),
            .apple(AppleMessage(user: "u1", clientId: "com.example.app", params: ["authorizationCodeSealed": "w"])),
        ]
        for (index, payload) in payloads.enumerated() {
            let job = Job(
                project: "demo", createdAt: created, expiresAt: created.addingTimeInterval(300), locale: index == 0 ? nil : "de", payload: payload)
            let body = JobCodec.encode(job)
            let text = String(decoding: body, as: UTF8.self)
            let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            let keys = object.keys.sorted()
            let positions = try keys.map { key in try #require(text.range(of: "\"\(key)\":")?.lowerBound, "\(key) in \(text)") }
            #expect(positions == positions.sorted(), "\(text)")
            #expect(object.keys.contains("locale") == (index != 0))
            #expect(try JobCodec.decode(body) == job)
        }
    }

    @Test("base64url round-trips every length, reads padded and standard alphabets, refuses what is not base64")
    func base64URL() throws {
        for length in 0..<70 {
            let bytes = Data(SecureRandom.bytes(length))
            let text = bytes.base64URLEncodedString()
            let reference = bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(text == reference)
            #expect(Data(base64URLEncoded: text) == bytes)
            #expect(Data(base64URLEncoded: bytes.base64EncodedString()) == bytes)
        }
        #expect(Data(base64URLEncoded: "ab$d") == nil)
        #expect(Data(base64URLEncoded: "abcde") == nil)
        #expect(Data(base64URLEncoded: "ab=c") == nil)
    }

    @Test("an apple job round-trips, with and without a redirect URI")
    func appleRoundTrip() throws {
        for redirect in [nil, "https://app.example.com/apple"] {
            let job = Job(
                project: "demo-project", createdAt: Date(timeIntervalSince1970: 1_800_000_000), expiresAt: Date(timeIntervalSince1970: 1_800_000_300),
                payload: .apple(
                    AppleMessage(user: "u123", clientId: "com.example.app", redirectUri: redirect, params: ["authorizationCodeSealed": "s="])))
            let decoded = try JobCodec.decode(JobCodec.encode(job))
            #expect(decoded == job)
            #expect(decoded.recipient == "u123" && decoded.templateName == "revoke" && decoded.type == .apple)
        }
    }

    @Test(
        "decoding names the field that is wrong",
        arguments: [
            (
                #"{"project":"p","type":"sms","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:05:00Z","to":"+1","template":"verification"}"#,
                "id"
            ),
            (#"{"id":"nope","project":"p","type":"sms"}"#, "id"),
            (
                #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","project":"p","type":"fax","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:05:00Z"}"#,
                "type"
            ),
            (
                #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","project":"p","type":"sms","createdAt":"yesterday","expiresAt":"2026-01-01T00:05:00Z"}"#,
                "createdAt"
            ),
            (
                #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","project":"p","type":"sms","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:05:00Z","to":"+15555550100","template":"poem"}"#,
                "template"
            ),
            (
                #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","project":"p","type":"sms","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:05:00Z","to":"+1 555 555 0100","template":"text"}"#,
                "to"
            ),
            ("not json", "body"),
            (
                #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","project":"p","type":"apple","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:05:00Z","action":"revoke","user":"u","clientId":"c","params":{}}"#,
                "params"
            ),
            (
                #"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","project":"p","type":"apple","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:05:00Z","action":"forget","user":"u","clientId":"c"}"#,
                "action"
            ),
        ])
    func decodingErrors(body: String, field: String) {
        #expect(throws: JobCodec.DecodingError.self) { try JobCodec.decode(Data(body.utf8)) }
        do {
            _ = try JobCodec.decode(Data(body.utf8))
        } catch {
            #expect(error.field == field)
        }
    }

    @Test("retries climb the ladder, honour Retry-After, stop at expiry and when exhausted")
    func retryPolicy() {
        let policy = RetryPolicy(delays: [.seconds(1), .seconds(5), .seconds(30)])
        let now = Date()
        let later = now.addingTimeInterval(300)
        #expect(policy.decide(failures: 1, retryAfter: nil, now: now, expiresAt: later) == .retry(delay: .seconds(1)))
        #expect(policy.decide(failures: 2, retryAfter: nil, now: now, expiresAt: later) == .retry(delay: .seconds(5)))
        #expect(policy.decide(failures: 1, retryAfter: .seconds(3), now: now, expiresAt: later) == .retry(delay: .seconds(5)))
        #expect(policy.decide(failures: 1, retryAfter: .seconds(20), now: now, expiresAt: later) == .retry(delay: .seconds(30)))
        #expect(policy.decide(failures: 4, retryAfter: nil, now: now, expiresAt: later) == .giveUp(.exhausted))
        #expect(policy.decide(failures: 3, retryAfter: nil, now: now, expiresAt: now.addingTimeInterval(10)) == .giveUp(.wouldExpire))
        #expect(policy.decide(failures: 1, retryAfter: .seconds(600), now: now, expiresAt: later) == .giveUp(.wouldExpire))
    }

    @Test("templates substitute and escape by destination")
    func templates() throws {
        let text = try Template("{{code}} is your code for {{app}}.", allowed: ["code", "app"])
        #expect(text.render(["code": "012345", "app": "Demo"]) == "012345 is your code for Demo.")
        let json = try Template(#"{"body":"{{body}}"}"#, allowed: ["body"])
        let rendered = json.render(["body": "a \"quoted\"\nline\\"], escaping: .jsonString)
        let parsed = try JSONSerialization.jsonObject(with: Data(rendered.utf8)) as? [String: String]
        #expect(parsed?["body"] == "a \"quoted\"\nline\\")
        let form = try Template("To={{to}}&Body={{body}}", allowed: ["to", "body"])
        #expect(form.render(["to": "+15555550100", "body": "a&b=c ü"], escaping: .formURLEncoded) == "To=%2B15555550100&Body=a%26b%3Dc%20%C3%BC")
        #expect(throws: Template.ParseError.self) { try Template("{{cod}}", allowed: ["code"]) }
        #expect(throws: Template.ParseError.self) { try Template("{{code", allowed: ["code"]) }
    }

    @Test("escaping random values: form encoding as Foundation's with RFC 3986's unreserved set; JSON strings read back")
    func escapingRandomValues() throws {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        let alphabet: [Unicode.Scalar] = [
            "a", "Z", "9", "-", ".", "_", "~", " ", "+", "&", "=", "%", "/", "\"", "\\", "\n", "\r", "\t", "\u{01}", "ü", "я", "€", "😀",
        ]
        var random = Xorshift(state: 0xE5C_A9E)
        for _ in 0..<2_000 {
            let scalars = (0..<Int.random(in: 0...20, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            let value = String(String.UnicodeScalarView(scalars))
            #expect(Template.escape(value, .formURLEncoded) == value.addingPercentEncoding(withAllowedCharacters: allowed))
            let json = Data(("{\"v\":\"" + Template.escape(value, .jsonString) + "\"}").utf8)
            #expect((try JSONSerialization.jsonObject(with: json) as? [String: String])?["v"] == value)
        }
    }

    @Test("durations and rate policies parse as configuration writes them")
    func parsing() {
        #expect(DurationText.parse("500ms") == .milliseconds(500))
        #expect(DurationText.parse("120s") == .seconds(120))
        #expect(DurationText.parse("10m") == .seconds(600))
        #expect(DurationText.parse("6h") == .seconds(21_600))
        #expect(DurationText.parse("1d") == .seconds(86_400))
        for bad in ["", "5", "m", "5 m", "-5s", "1.5s", "5w"] { #expect(DurationText.parse(bad) == nil) }
        #expect(DurationText.format(.seconds(300)) == "5m")
        #expect(DurationText.format(.milliseconds(1500)) == "1500ms")
        #expect(RatePolicy.parse("5/1h") == RatePolicy(limit: 5, period: .seconds(3600)))
        #expect(RatePolicy.parse("1000/1m burst 200") == RatePolicy(limit: 1000, period: .seconds(60), burst: 200))
        for bad in ["5", "5/", "/1h", "0/1h", "5/0s", "5/1h burst", "5/1h burst x", "5/1h flood 3"] { #expect(RatePolicy.parse(bad) == nil) }
    }

    @Test("traceparent headers parse and propagate")
    func traceparent() throws {
        let parent = try #require(TraceParent(header: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        #expect(parent.description == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        let child = parent.child()
        #expect(child.traceID == parent.traceID)
        #expect(child.spanID != parent.spanID)
        #expect(child.description == "00-\(child.traceID)-\(child.spanID)-01")
        #expect(TraceParent(header: "garbage") == nil)
        #expect(TraceParent(header: "00-00000000000000000000000000000000-00f067aa0ba902b7-01") == nil)
        #expect(TraceParent(header: TraceParent.random().description) != nil)
        // New roots: ids of the right lengths, no two alike, and a span drawn from other bytes than its trace.
        let roots = (0..<100).map { _ in TraceParent.random() }
        #expect(roots.allSatisfy { $0.traceID.utf8.count == 32 && $0.spanID.utf8.count == 16 && $0.flags == "01" })
        #expect(Set(roots.map(\.traceID)).count == 100 && Set(roots.map(\.spanID)).count == 100)
        #expect(roots.allSatisfy { $0.traceID.contains($0.spanID) == false })
    }
}
