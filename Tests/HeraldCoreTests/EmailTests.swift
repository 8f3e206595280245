import Foundation
import Testing

@testable import HeraldCore

@Suite("Email domain: addresses, continue URLs, links, MIME (no I/O)")
struct EmailTests {
    @Test("addresses are trimmed and lower-cased; header-breaking input is refused; private relay is recognized")
    func addresses() {
        #expect(EmailAddress(" Alice@Example.COM ")?.value == "alice@example.com")
        #expect(EmailAddress("a.b+tag@sub.example.co.uk") != nil)
        for bad in [
            "", "plain", "@example.com", "a@", "a@localhost", "a@b..com", "a b@example.com", "a@example.com\r\nBcc: x@y.z",
            "<a@example.com>", "a,b@example.com", "ä@example.com",
        ] {
            #expect(EmailAddress(bad) == nil, "\(bad)")
        }
        #expect(EmailAddress("x@privaterelay.appleid.com")?.isPrivateRelay == true)
        #expect(EmailAddress("x@privaterelay.appleid.com.evil.net")?.isPrivateRelay == false)
        #expect(EmailAddress("alice@example.com")?.masked == "a***@example.com")
    }

    @Test("continue URLs: absolute with scheme and host; host on the allow-list exactly, or under a *.domain entry")
    func continueURLs() throws {
        let domains = ["*.example.com", "localhost"]
        #expect(try ContinueURL("https://app.example.com/x?y=1", authorizedDomains: domains).host == "app.example.com")
        #expect(throws: ContinueURL.Problem.unauthorized(host: "example.com"), "a wildcard is for subdomains only") {
            try ContinueURL("https://example.com/", authorizedDomains: domains)
        }
        #expect(throws: ContinueURL.Problem.unauthorized(host: "app.example.com"), "an exact entry implies no subdomain") {
            try ContinueURL("https://app.example.com/", authorizedDomains: ["example.com"])
        }
        #expect(throws: ContinueURL.Problem.malformed, "hosts are ASCII") {
            try ContinueURL("https://ａttacker.example.com/", authorizedDomains: domains)
        }
        #expect(throws: ContinueURL.Problem.malformed) { try ContinueURL("/relative", authorizedDomains: domains) }
        #expect(throws: ContinueURL.Problem.malformed) { try ContinueURL("https:///nohost", authorizedDomains: domains) }
        #expect(throws: ContinueURL.Problem.malformed) { try ContinueURL("https://a b.example.com/", authorizedDomains: domains) }
        #expect(throws: ContinueURL.Problem.unauthorized(host: "example.com.evil.net")) {
            try ContinueURL("https://example.com.evil.net/", authorizedDomains: domains)
        }
        #expect(throws: ContinueURL.Problem.unauthorized(host: "notexample.com")) {
            try ContinueURL("https://notexample.com/", authorizedDomains: domains)
        }
        #expect(throws: ContinueURL.Problem.unauthorized(host: "localhost.evil.net")) {
            try ContinueURL("http://localhost.evil.net/", authorizedDomains: domains)
        }
    }

    @Test("continue URLs where parsers disagree, and non-web schemes, are refused; the rest is rebuilt from its parts")
    func continueURLParsing() throws {
        let domains = ["app.example.com", "localhost"]
        // Foundation reads these hosts as example.com or localhost; a browser goes to evil.com.
        for text in [
            "https://evil.com\\@localhost/", "https://evil.com\\@app.example.com/x", "https://evil.com@app.example.com/",
            "https://user:pass@app.example.com/", "https:\\\\evil.com/", "https://app.example.com\\evil.com/",
            "https://app.example.com\t/", " https://app.example.com/", "https://app.example.com/%zz", "https://app.example.com:99999/",
            "https://app.exa mple.com/", "https://-bad-.example.com/", "https://app.example.com./", "https://[::1/",
            "javascript:alert(1)//app.example.com", "JavaScript://app.example.com/%0Aalert(1)", "data:text/html,<b>x</b>",
            "file:///etc/passwd", "file://app.example.com/etc/passwd", "ftp://app.example.com/", "//app.example.com/",
            "https://app.example.com/café",
        ] {
            #expect(throws: ContinueURL.Problem.malformed, "\(text)") { try ContinueURL(text, authorizedDomains: domains) }
        }
        #expect(
            try ContinueURL("HTTPS://App.Example.com:8443/a/\"q\"?x=<1>&y=%2f#f|g", authorizedDomains: domains).text
                == "https://app.example.com:8443/a/%22q%22?x=%3C1%3E&y=%2F#f%7Cg")
        #expect(try ContinueURL("https://app.example.com", authorizedDomains: domains).text == "https://app.example.com/")
        #expect(try ContinueURL("http://[::1]:9099/done", authorizedDomains: ["[::1]"]).text == "http://[::1]:9099/done")
        // App schemes only when the project lists them; their host is not a web host to authorize.
        #expect(throws: ContinueURL.Problem.malformed) { try ContinueURL("com.example.app://finish", authorizedDomains: domains) }
        #expect(
            try ContinueURL("com.example.app://finish?x=1", authorizedDomains: domains, appSchemes: ["com.example.app"]).text
                == "com.example.app://finish?x=1")
        #expect(try ContinueURL("com.example.app:/done", authorizedDomains: domains, appSchemes: ["com.example.app"]).text == "com.example.app:/done")
        #expect(throws: ContinueURL.Problem.malformed) {
            try ContinueURL("com.example.app:////evil.com", authorizedDomains: domains, appSchemes: ["com.example.app"])
        }
    }

    @Test("the sign-in link: Firebase's parameters, strictly percent-encoded; the handler's redirect appends them to continueUrl")
    func links() throws {
        let link = SignInLink(
            actionURL: "https://auth.example.com/__/auth/action", apiKey: "k", oobCode: "c0de-_", continueURL: "https://app.example.com/a?b=1&c=d e",
            languageCode: "de-AT")
        #expect(
            link.text
                == "https://auth.example.com/__/auth/action?apiKey=k&mode=signIn&oobCode=c0de-_&continueUrl=https%3A%2F%2Fapp.example.com%2Fa%3Fb%3D1%26c%3Dd%20e&lang=de-AT"
        )
        #expect(OobCode.generate().count == 54)
        #expect(OobCode.generate() != OobCode.generate())
        #expect(OobCode.storageHash("x") != "x" && OobCode.storageHash("x").count == 64)

        let target = try ContinueURL("https://app.example.com/a?b=1#frag", authorizedDomains: ["app.example.com"])
        let redirect = SignInLink.redirect(
            to: target,
            parameters: [
                ("apiKey", "k"), ("mode", "signIn"), ("oobCode", "abc"), ("continueUrl", "https://app.example.com/a?b=1#frag"), ("lang", "en"),
            ])
        #expect(redirect == "https://app.example.com/a?b=1&apiKey=k&mode=signIn&oobCode=abc&lang=en#frag")
        #expect(SignInLink.redirect(to: target, parameters: [("continueUrl", "x")]) == "https://app.example.com/a?b=1#frag")
    }

    @Test("quoted-printable: = and non-ASCII encoded, lines ≤ 76 with soft breaks, trailing space encoded, CRLF; round trip")
    func quotedPrintable() {
        let text = "Open https://x.example/a?apiKey=k&mode=signIn&oobCode=" + String(repeating: "Ab", count: 60) + "\nGrüße, 你好 \nend"
        let encoded = QuotedPrintable.encode(text)
        let lines = encoded.components(separatedBy: "\r\n")
        #expect(lines.allSatisfy { $0.count <= 76 })
        #expect(encoded.contains("apiKey=3Dk"))
        #expect(encoded.contains("Gr=C3=BC=C3=9Fe"))
        #expect(lines.contains { $0.hasSuffix("=20") })
        #expect(encoded.contains("\n") == encoded.contains("\r\n"))
        #expect(QuotedPrintable.decode(encoded) == text.replacingOccurrences(of: "\n", with: "\r\n"))
    }

    @Test("RFC 2047: ASCII subjects stay, others become UTF-8 B-words ≤ 75 characters, never splitting a character")
    func encodedWords() throws {
        #expect(EncodedWord.encode("Sign in to Demo") == "Sign in to Demo")
        let subject = String(repeating: "Überprüfung 🔐 ", count: 6)
        let encoded = EncodedWord.encode(subject)
        let words = encoded.components(separatedBy: "\r\n ")
        #expect(words.count > 1)
        var decoded = ""
        for word in words {
            #expect(word.count <= 75)
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            let data = try #require(Data(base64Encoded: String(word.dropFirst(10).dropLast(2))))
            let piece = try #require(String(data: data, encoding: .utf8), "a word split a UTF-8 sequence")
            decoded += piece
        }
        #expect(decoded == subject)
    }

    @Test("the MIME message: one of each header, folded lines, CRLF only, text before HTML, no CR/LF injection")
    func mimeMessage() throws {
        let message = MIMEMessage(
            from: try #require(Mailbox(parsing: "Démo App <no-reply@example.com>")), replyTo: Mailbox(parsing: "help@example.com"),
            to: "alice@example.com", subject: "Hi\r\nBcc: evil@example.net", text: "text", html: "<p>html</p>",
            date: Date(timeIntervalSince1970: 1_503_411_323), messageID: "<id@example.com>", boundary: "=_herald_B")
        let raw = String(decoding: message.rendered, as: UTF8.self)
        #expect(raw.replacingOccurrences(of: "\r\n", with: "").contains("\n") == false)
        #expect(raw.contains("\r\nBcc:") == false)
        #expect(raw.contains("Subject: HiBcc: evil@example.net\r\n"))
        #expect(raw.hasPrefix("From: =?UTF-8?B?"))
        #expect(raw.contains("Date: Tue, 22 Aug 2017 14:15:23 +0000\r\n"))
        #expect(raw.contains("Reply-To: help@example.com\r\n"))
        #expect(raw.components(separatedBy: "\r\n").allSatisfy { $0.count <= 78 })
        let text = try #require(raw.range(of: "Content-Type: text/plain; charset=UTF-8"))
        let html = try #require(raw.range(of: "Content-Type: text/html; charset=UTF-8"))
        #expect(text.lowerBound < html.lowerBound)
        #expect(raw.hasSuffix("--=_herald_B--\r\n"))
    }

    @Test("mailboxes: display names, bare and bracketed addresses; injection refused")
    func mailboxes() {
        #expect(Mailbox(parsing: "Herald <no-reply@localhost>") == Mailbox(displayName: "Herald", address: "no-reply@localhost"))
        #expect(Mailbox(parsing: "\"Herald, Inc.\" <a@b.c>")?.displayName == "Herald, Inc.")
        #expect(Mailbox(parsing: "a@b.c")?.headerValue == "a@b.c")
        #expect(Mailbox(parsing: "Herald, Inc. <a@b.c>")?.headerValue == "\"Herald, Inc.\" <a@b.c>")
        #expect(Mailbox(parsing: "x <a@b.c>\r\nBcc: y@z") == nil)
        #expect(Mailbox(parsing: "no at sign") == nil)
    }

    @Test("email jobs round-trip through the codec; a bad recipient is refused by field")
    func emailJobs() throws {
        let job = Job(
            project: "p", createdAt: Date(timeIntervalSince1970: 1000), expiresAt: Date(timeIntervalSince1970: 2000), locale: "de",
            payload: .email(EmailMessage(to: "a@example.com", template: .signInLink, params: ["linkSealed": "x"])))
        #expect(try JobCodec.decode(JobCodec.encode(job)) == job)
        var wire = try #require(try JSONSerialization.jsonObject(with: JobCodec.encode(job)) as? [String: Any])
        wire["to"] = "nope"
        #expect(throws: JobCodec.DecodingError(field: "to", problem: "not an email address")) {
            try JobCodec.decode(try JSONSerialization.data(withJSONObject: wire))
        }
    }

    @Test("session purposes round-trip through their stored form")
    func sessionPurposes() {
        for purpose in [SessionPurpose.signIn, .mfaEnrollment(localID: "u1"), .mfaSignIn(localID: "u1", enrollmentID: "e1")] {
            #expect(SessionPurpose(stored: purpose.description) == purpose)
        }
        #expect(SessionPurpose(stored: "bogus") == nil)
    }
}

@Suite("Mailboxes for limits")
struct MailboxTests {
    @Test("+tags fold everywhere, dots only at Gmail, and the domain's case never counts")
    func folding() {
        let cases: [(String, String)] = [
            ("victim@example.com", "victim@example.com"), ("victim+1@example.com", "victim@example.com"),
            ("Victim+a+b@EXAMPLE.com", "victim@example.com"), ("v.ic.tim@example.com", "v.ic.tim@example.com"),
            ("v.ic.tim+x@gmail.com", "victim@gmail.com"), ("victim@googlemail.com", "victim@gmail.com"), ("+x@example.com", "+x@example.com"),
        ]
        for (address, mailbox) in cases {
            #expect(EmailAddress(address)?.mailbox == mailbox, "\(address)")
        }
        #expect(LimitCheck.subject("a+b@example.com", kind: "email") == "a@example.com")
        #expect(LimitCheck.subject("+15555550100", kind: "number") == "+15555550100")
    }
}
