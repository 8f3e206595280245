import Foundation
import HeraldCore
import Testing

@Suite("SMS segments (GSM-7 with the extension table, UCS-2)")
struct SMSSegmentsTests {
    func shape(_ text: String) -> (SMSSegments.Encoding, Int, Int) {
        let segments = SMSSegments(text)
        return (segments.encoding, segments.units, segments.segments)
    }

    @Test("GSM-7: 160 septets fit one segment, 161 need two of 153")
    func gsm7() {
        #expect(shape(String(repeating: "a", count: 160)) == (.gsm7, 160, 1))
        #expect(shape(String(repeating: "a", count: 161)) == (.gsm7, 161, 2))
        #expect(shape(String(repeating: "a", count: 306)) == (.gsm7, 306, 2))
        #expect(shape(String(repeating: "a", count: 307)) == (.gsm7, 307, 3))
        #expect(SMSSegments("Ihr Bestätigungscode: 123456. Gültig 5 Minuten.").encoding == .gsm7)
        #expect(SMSSegments("Code für Müller: 123456 @ £5 ¿ÑÜ").encoding == .gsm7)
        #expect(SMSSegments("").segments == 1)
    }

    @Test("extension characters cost two septets and an escape pair is never split")
    func extensionTable() {
        #expect(shape(String(repeating: "€", count: 80)) == (.gsm7, 160, 1))
        #expect(shape(String(repeating: "€", count: 81)) == (.gsm7, 162, 2))
        #expect(shape("a" + String(repeating: "{", count: 76) + "}") == (.gsm7, 155, 1))
        // 306 septets would fit two segments of 153, but the pair at septets 153–154 moves whole to
        // the second segment, which then overflows by one: three segments.
        #expect(shape(String(repeating: "a", count: 152) + "[" + String(repeating: "a", count: 152)) == (.gsm7, 306, 3))
        #expect(shape("line\r\nbreak") == (.gsm7, 11, 1))
    }

    @Test("one character outside GSM makes the text UCS-2: 70 units, then 67 per segment; surrogate pairs count two")
    func ucs2() {
        #expect(shape("Ваш код: 123456") == (.ucs2, 15, 1))
        #expect(shape(String(repeating: "я", count: 70)) == (.ucs2, 70, 1))
        #expect(shape(String(repeating: "я", count: 71)) == (.ucs2, 71, 2))
        #expect(shape(String(repeating: "a", count: 69) + "ç") == (.ucs2, 70, 1))  // only Ç (capital) is in GSM 03.38
        #expect(shape(String(repeating: "😀", count: 35)) == (.ucs2, 70, 1))
        #expect(shape("a" + String(repeating: "😀", count: 35)) == (.ucs2, 71, 2))
        // 134 units would fit two segments of 67, but a surrogate pair never straddles: three.
        #expect(shape("ab" + String(repeating: "😀", count: 66)) == (.ucs2, 134, 3))
        #expect(SMSSegments("您的验证码是 123456").encoding == .ucs2)
    }

    @Test("a decomposed é is composed before the alphabet check")
    func normalization() {
        #expect(SMSSegments("Code de vérification: 123456").encoding == .gsm7)
        #expect(SMSSegments("Code de ve\u{301}rification: 123456").encoding == .gsm7)
    }

    @Test("a text counts as its composed form does, whatever mix of GSM-7, extension, decomposed and other scalars it holds")
    func countsAsComposed() {
        // Pieces that compose (e + acute, A + ring, the Ohm and Angstrom signs as singletons), GSM-7 and
        // extension characters, characters outside GSM-7, CR LF, a surrogate pair.
        let pieces = [
            "a", "Z", "0", " ", "@", "€", "{", "\\", "\r\n", "é", "e\u{301}", "A\u{30A}", "\u{2126}", "\u{212B}", "ç", "я", "😀",
            "\u{301}", "ß", "Ω", "Å", "~",
        ]
        var random = Xorshift(state: 0x5EED_0F_5E9)
        for _ in 0..<3_000 {
            let text = (0..<Int.random(in: 0...40, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let composed = SMSSegments(text.precomposedStringWithCanonicalMapping)
            #expect(SMSSegments(text) == composed, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        // The singletons compose to letters of the alphabet.
        #expect(SMSSegments("\u{2126}\u{212B}").encoding == .gsm7)
    }
}

@Suite("SMS texts: locales, fallback, origin-bound line")
struct SMSTextTests {
    @Test("fallback chains follow Firebase: de-AT → de → en; unknown → en")
    func fallbacks() {
        #expect(TemplateCatalog.fallbacks(for: "de-AT") == ["de-at", "de", "en"])
        #expect(TemplateCatalog.fallbacks(for: "de_AT") == ["de-at", "de", "en"])
        #expect(TemplateCatalog.fallbacks(for: "zh-Hans-CN") == ["zh-hans-cn", "zh-hans", "zh", "en"])
        #expect(TemplateCatalog.fallbacks(for: "en-GB") == ["en-gb", "en"])
        #expect(TemplateCatalog.fallbacks(for: nil) == ["en"])
        #expect(TemplateCatalog.fallbacks(for: "") == ["en"])
    }

    @Test("lookups pick the nearest locale that has the template")
    func lookup() throws {
        let allowed: Set<String> = ["code"]
        let catalog = TemplateCatalog([
            "en": ["verification": try Template("Your code is {{code}}", allowed: allowed), "mfa": try Template("MFA {{code}}", allowed: allowed)],
            "de": ["verification": try Template("Dein Code: {{code}}", allowed: allowed)],
            "pt-BR": ["verification": try Template("Seu código: {{code}}", allowed: allowed)],
        ])
        #expect(catalog.template("verification", locale: "de-AT")?.locale == "de")
        #expect(catalog.template("verification", locale: "de-AT")?.template.render(["code": "1"]) == "Dein Code: 1")
        #expect(catalog.template("mfa", locale: "de-AT")?.locale == "en")
        #expect(catalog.template("verification", locale: "pt-br")?.locale == "pt-br")
        #expect(catalog.template("verification", locale: "pt-PT")?.locale == "en")
        #expect(catalog.template("verification", locale: "xx")?.locale == "en")
        #expect(catalog.template("nothing", locale: "de") == nil)
    }

    @Test("Android hash on its own line, then the origin-bound line last")
    func compose() {
        #expect(SMSText.compose(text: "Your code is 123456", code: "123456", androidAppHash: nil, originDomain: nil) == "Your code is 123456")
        #expect(
            SMSText.compose(text: "Your code is 123456", code: "123456", androidAppHash: "FA+9qCX9VSu", originDomain: "app.example.com")
                == "Your code is 123456\nFA+9qCX9VSu\n\n@app.example.com #123456")
        let text = SMSText.compose(text: "Code 654321", code: "654321", androidAppHash: nil, originDomain: "example.com")
        #expect(text.split(separator: "\n").last == "@example.com #654321")
    }
}

@Suite("app credentials")
struct AppCredentialTests {
    @Test("fields pick the credential; half a pair is invalid; NO_RECAPTCHA counts as none")
    func parsing() {
        #expect(
            AppCredential.from(iosReceipt: "r", iosSecret: "s", recaptchaToken: nil, captchaResponse: nil) == .iosReceipt(receipt: "r", secret: "s"))
        #expect(AppCredential.from(iosReceipt: "r", iosSecret: nil, recaptchaToken: "t", captchaResponse: nil) == nil)
        #expect(AppCredential.from(iosReceipt: nil, iosSecret: "s", recaptchaToken: nil, captchaResponse: nil) == nil)
        #expect(AppCredential.from(iosReceipt: nil, iosSecret: nil, recaptchaToken: "t", captchaResponse: nil) == .captcha(token: "t"))
        #expect(AppCredential.from(iosReceipt: nil, iosSecret: nil, recaptchaToken: nil, captchaResponse: "c") == .captcha(token: "c"))
        #expect(AppCredential.from(iosReceipt: nil, iosSecret: nil, recaptchaToken: nil, captchaResponse: "NO_RECAPTCHA") == AppCredential.none)
        #expect(AppCredential.from(iosReceipt: nil, iosSecret: nil, recaptchaToken: nil, captchaResponse: nil) == AppCredential.none)
    }

    @Test("a receipt is valid for its project and bundle, with its secret, within the TTL")
    func receipts() {
        let issued = Date(timeIntervalSince1970: 1_800_000_000)
        let receipt = AppReceipt(
            receiptHash: SHA256Hex.digest("receipt"), projectID: "p", bundleID: "com.example.app", secretHash: SHA256Hex.digest("secret"),
            deviceTokenHash: "d", createdAt: issued)
        let hour: Duration = .seconds(3600)
        let later = issued.addingTimeInterval(3599)
        #expect(AppVerificationCheck.receiptIsValid(receipt, secret: "secret", projectID: "p", bundleID: "com.example.app", now: later, ttl: hour))
        #expect(AppVerificationCheck.receiptIsValid(receipt, secret: "secret", projectID: "p", bundleID: nil, now: later, ttl: hour))
        #expect(AppVerificationCheck.receiptIsValid(receipt, secret: "secreT", projectID: "p", bundleID: nil, now: later, ttl: hour) == false)
        #expect(AppVerificationCheck.receiptIsValid(receipt, secret: "secret", projectID: "q", bundleID: nil, now: later, ttl: hour) == false)
        #expect(AppVerificationCheck.receiptIsValid(receipt, secret: "secret", projectID: "p", bundleID: "com.other", now: later, ttl: hour) == false)
        #expect(
            AppVerificationCheck.receiptIsValid(
                receipt, secret: "secret", projectID: "p", bundleID: nil, now: issued.addingTimeInterval(3600), ttl: hour)
                == false)
        #expect(AppVerificationCheck.receiptIsValid(nil, secret: "secret", projectID: "p", bundleID: nil, now: later, ttl: hour) == false)
    }

    @Test("captcha: success required; a score is compared with minScore only when present")
    func captcha() {
        #expect(AppVerificationCheck.captchaPasses(success: true, score: nil, minScore: 0.5))
        #expect(AppVerificationCheck.captchaPasses(success: true, score: 0.5, minScore: 0.5))
        #expect(AppVerificationCheck.captchaPasses(success: true, score: 0.3, minScore: 0.5) == false)
        #expect(AppVerificationCheck.captchaPasses(success: false, score: 0.9, minScore: 0.5) == false)
        #expect(AppVerificationCheck.captchaPasses(success: false, score: nil, minScore: 0) == false)
    }
}
