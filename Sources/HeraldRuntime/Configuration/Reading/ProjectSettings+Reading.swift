import Foundation
import HeraldCore

extension ProjectSettings {
    /// `projects[]`.
    init(reader: ConfigReader) throws {
        let id = try reader.string("id", default: "")
        guard id.isEmpty == false, id.count <= 63, id.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) else {
            throw reader.fail("id", "must be 1-63 lowercase letters, digits or '-' (got '\(id)')")
        }
        let displayName = try reader.string("displayName", default: id)
        let apiKeys = try reader.stringList("apiKeys", default: [])
        guard apiKeys.isEmpty == false, apiKeys.allSatisfy({ $0.isEmpty == false }) else {
            throw reader.fail("apiKeys", "at least one non-empty API key is required")
        }
        let authorizedDomains = try reader.stringList("authorizedDomains", default: ["localhost"])
        var apps = try (reader.sectionList("iosApps") ?? []).map(IOSApp.init(reader:))
        let shorthand = try reader.stringList("iosBundleIds", default: [])
        for bundleId in shorthand where apps.contains(where: { $0.bundleId == bundleId }) == false { apps.append(IOSApp(bundleId: bundleId)) }
        self.init(
            id: id, displayName: displayName, apiKeys: apiKeys, authorizedDomains: authorizedDomains, iosBundleIds: apps.map(\.bundleId),
            iosApps: apps, androidApps: try (reader.sectionList("androidApps") ?? []).map(AndroidApp.init(reader:)),
            phone: try Phone(reader: try reader.section("phone")), emailLink: try EmailLink(reader: try reader.section("emailLink")),
            apple: try Apple(reader: try reader.section("apple")), mfa: try MFA(reader: try reader.section("mfa")),
            appVerification: try AppVerification(reader: try reader.section("appVerification")))
        password = try Password(reader: try reader.section("password"))
        passwordPolicy = try PasswordPolicy(reader: try reader.section("passwordPolicy"))
        try reader.finish()
    }
}

extension ProjectSettings.IOSApp {
    /// `projects[].iosApps[]`.
    init(reader app: ConfigReader) throws {
        let bundleId = try app.string("bundleId", default: "")
        guard bundleId.isEmpty == false else { throw app.fail("bundleId", "is required") }
        let teamId = try app.optionalString("teamId")
        if let teamId, teamId.count != 10 || teamId.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) == false {
            throw app.fail("teamId", "an Apple team id is 10 upper-case letters and digits")
        }
        let reversed = try app.optionalString("reversedClientId")
        if let reversed, reversed.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.".contains($0)) }) == false {
            throw app.fail("reversedClientId", "is a URL scheme such as com.googleusercontent.apps.123-abc")
        }
        self.init(bundleId: bundleId, teamId: teamId, reversedClientId: reversed, appId: try app.optionalString("appId"))
        try app.finish()
    }
}

extension ProjectSettings.AndroidApp {
    /// `projects[].androidApps[]`.
    init(reader app: ConfigReader) throws {
        let packageName = try app.string("packageName", default: "")
        guard packageName.isEmpty == false else { throw app.fail("packageName", "is required") }
        let fingerprints = try app.stringList("sha256CertFingerprints", default: [])
        for fingerprint in fingerprints {
            let hex = fingerprint.split(separator: ":")
            guard hex.count == 32, hex.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else {
                throw app.fail("sha256CertFingerprints", "'\(fingerprint)' is not a SHA-256 fingerprint (32 hex pairs separated by ':')")
            }
        }
        self.init(packageName: packageName, sha256CertFingerprints: fingerprints.map { $0.uppercased() })
        try app.finish()
    }
}

extension ProjectSettings.Phone {
    /// `projects[].phone`.
    init(reader phone: ConfigReader) throws {
        let codeLength = try phone.int("codeLength", default: 6, in: 4...10)
        var testNumbers: [String: String] = [:]
        let allowReal = try phone.bool("testNumbersAllowReal", default: false)
        for (number, code) in try phone.stringMap("testNumbers") {
            let key = phone.keyPath("testNumbers") + ".\(number)"
            guard let parsed = try? PhoneNumber(parsing: number) else {
                throw ConfigError(key: key, problem: "not a valid E.164 phone number")
            }
            guard OneTimeCode.isWellFormed(code, length: codeLength) else {
                throw ConfigError(key: key, problem: "the code must be exactly \(codeLength) digits (phone.codeLength)")
            }
            // A fixed code on a real number is a standing login into whoever owns it.
            guard allowReal || FictionalNumbers.contains(parsed.e164) else {
                throw ConfigError(
                    key: key,
                    problem:
                        "not a fictional number (NANP 555 exchange, Ofcom or ACMA drama ranges; README); set phone.testNumbersAllowReal: true to list a real one"
                )
            }
            testNumbers[parsed.e164] = code
        }
        guard testNumbers.count <= 10 else { throw phone.fail("testNumbers", "at most 10 test numbers are allowed") }
        let regions = try ProjectSettings.Regions(reader: try phone.section("regions"))
        self.init(
            enabled: try phone.bool("enabled", default: true), codeLength: codeLength,
            codeTTL: try phone.duration("codeTTL", default: .seconds(300), in: .seconds(10) ... .seconds(86_400)),
            maxCheckAttempts: try phone.int("maxCheckAttempts", default: 5, in: 1...100),
            resendAfter: try phone.duration("resendAfter", default: .seconds(30), in: .zero ... .seconds(3600)),
            testNumbers: testNumbers, testNumbersAllowReal: allowReal, regions: regions,
            originDomain: try phone.optionalString("originDomain"), androidAppHash: try phone.optionalString("androidAppHash"))
        if let domain = originDomain, domain.isEmpty || domain.contains(where: { $0 == " " || $0 == "@" || $0 == "#" || $0 == "/" }) {
            throw phone.fail("originDomain", "must be a bare host name such as example.com")
        }
        if let hash = androidAppHash,
            hash.count != 11 || hash.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") }) == false
        {
            throw phone.fail("androidAppHash", "must be the 11-character SMS Retriever hash of the app")
        }
        try phone.finish()
    }
}

extension ProjectSettings.Regions {
    /// `projects[].phone.regions`.
    init(reader regions: ConfigReader) throws {
        let allow = try regions.stringList("allow", default: [])
        let deny = try regions.stringList("deny", default: [])
        for (name, list) in [("allow", allow), ("deny", deny)] {
            if let bad = list.first(where: { $0.count != 2 || $0.allSatisfy({ $0.isASCII && $0.isUppercase }) == false }) {
                throw regions.fail(name, "regions are ISO 3166 two-letter codes such as US or DE (got '\(bad)')")
            }
        }
        guard allow.isEmpty || deny.isEmpty else {
            throw regions.fail("allow", "set either an allow-list or a deny-list, not both")
        }
        try regions.finish()
        self.init(allow: allow, deny: deny)
    }
}

extension ProjectSettings.EmailLink {
    /// `projects[].emailLink`.
    init(reader emailLink: ConfigReader) throws {
        self.init(
            enabled: try emailLink.bool("enabled", default: true),
            linkTTL: try emailLink.duration("linkTTL", default: .seconds(6 * 3600), in: .seconds(60) ... .seconds(7 * 86_400)),
            actionUrl: try emailLink.string("actionUrl", default: "http://localhost:9099/__/auth/action"),
            enumerationProtection: try emailLink.bool("enumerationProtection", default: true),
            appSchemes: try emailLink.stringList("appSchemes", default: []).map { $0.lowercased() })
        guard ["http://", "https://"].contains(where: actionUrl.lowercased().hasPrefix), URL(string: actionUrl)?.host != nil else {
            throw emailLink.fail("actionUrl", "must be an http:// or https:// URL")
        }
        for (index, scheme) in appSchemes.enumerated() {
            let allowed = scheme.first?.isLetter == true && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
            guard allowed, ContinueURL.webSchemes.contains(scheme) == false, ContinueURL.forbiddenSchemes.contains(scheme) == false else {
                throw ConfigError(
                    key: emailLink.keyPath("appSchemes") + "[\(index)]",
                    problem: "must be an app's own URL scheme such as com.example.app (got '\(scheme)')")
            }
        }
        linkDomains = try emailLink.stringList("linkDomains", default: [])
        for (index, host) in linkDomains.enumerated() {
            let valid =
                host.isEmpty == false && host.utf8.count <= 253
                && host.utf8.allSatisfy {
                    ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                        || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                }
                && host.hasPrefix(".") == false && host.hasSuffix(".") == false && host.contains("..") == false
            guard valid else {
                throw ConfigError(
                    key: emailLink.keyPath("linkDomains") + "[\(index)]",
                    problem: "must be a host name in lowercase ASCII such as links.example.com (got '\(host)')")
            }
        }
        try emailLink.finish()
    }
}

extension ProjectSettings.Apple {
    /// `projects[].apple`.
    init(reader apple: ConfigReader) throws {
        self.init(
            enabled: try apple.bool("enabled", default: false),
            clientIds: try apple.stringList("clientIds", default: []),
            jwksUrl: try apple.string("jwksUrl", default: "https://appleid.apple.com/auth/keys"),
            tokenUrl: try apple.string("tokenUrl", default: "https://appleid.apple.com/auth/token"),
            revokeUrl: try apple.string("revokeUrl", default: "https://appleid.apple.com/auth/revoke"),
            caFile: try apple.optionalString("caFile"), teamId: try apple.optionalString("teamId"),
            keyId: try apple.optionalString("keyId"), keyFile: try apple.optionalString("keyFile"))
        for (key, url) in [("jwksUrl", jwksUrl), ("tokenUrl", tokenUrl), ("revokeUrl", revokeUrl)] {
            guard url.lowercased().hasPrefix("https://"), URL(string: url)?.host != nil else {
                throw apple.fail(key, "must be an https:// URL")
            }
        }
        if enabled, clientIds.isEmpty {
            throw apple.fail("clientIds", "list the app's bundle id (and any Services id) when Sign in with Apple is enabled")
        }
        let key = [teamId, keyId, keyFile]
        if key.contains(where: { $0 != nil }), key.contains(where: { $0 == nil }) {
            throw apple.fail(teamId == nil ? "teamId" : keyId == nil ? "keyId" : "keyFile", "teamId, keyId and keyFile are set together")
        }
        try apple.finish()
    }
}

extension ProjectSettings.MFA {
    /// `projects[].mfa`.
    init(reader mfa: ConfigReader) throws {
        self.init(phone: try mfa.choice("phone", ["enabled", "disabled"], default: "enabled"))
        try mfa.finish()
    }
}

extension ProjectSettings.AppVerification {
    /// `projects[].appVerification`.
    init(reader verification: ConfigReader) throws {
        let captcha = try verification.section("captcha")
        self.init(
            required: try verification.bool("required", default: true),
            disabledForTesting: try verification.bool("disabledForTesting", default: false),
            receiptTTL: try verification.duration("receiptTTL", default: .seconds(3600), in: .seconds(60) ... .seconds(86_400)),
            pushTTL: try verification.duration("pushTTL", default: .seconds(300), in: .seconds(10) ... .seconds(3600)),
            suggestedTimeout: try verification.duration("suggestedTimeout", default: .seconds(5), in: .seconds(1) ... .seconds(60)),
            captchaVerifyUrl: try captcha.optionalString("verifyUrl"),
            captchaSecret: try captcha.optionalString("secret"),
            captchaMinScore: try captcha.double("minScore", default: 0.5, in: 0...1),
            captchaSiteKey: try captcha.optionalString("siteKey"),
            // Without a widget script the site key is what it always was: reCAPTCHA Enterprise.
            captchaWidget: CaptchaWidget(
                rawValue: try captcha.choice(
                    "widget", CaptchaWidget.allCases.map(\.rawValue),
                    default: try captcha.optionalString("widgetScriptUrl") == nil ? "recaptchaEnterprise" : "recaptcha"))!,
            captchaWidgetScriptUrl: try captcha.optionalString("widgetScriptUrl"))
        if let url = captchaWidgetScriptUrl {
            guard url.hasPrefix("https://") || url.hasPrefix("http://"), URL(string: url)?.host != nil else {
                throw captcha.fail("widgetScriptUrl", "must be an http(s):// URL")
            }
            guard captchaSiteKey != nil else { throw captcha.fail("siteKey", "is required with widgetScriptUrl") }
        }
        if let url = captchaVerifyUrl {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else { throw captcha.fail("verifyUrl", "must be an http(s):// URL") }
            guard captchaSecret != nil else { throw captcha.fail("secret", "is required with verifyUrl") }
        }
        try captcha.finish()
        try verification.finish()
    }
}

extension ProjectSettings.Password {
    /// `projects[].password`.
    init(reader section: ConfigReader) throws {
        self.init(
            enabled: try section.bool("enabled", default: true), anonymous: try section.bool("anonymous", default: false),
            resetLinkTTL: try section.duration("resetLinkTTL", default: .seconds(3600), in: .seconds(60) ... .seconds(86_400)),
            verifyLinkTTL: try section.duration("verifyLinkTTL", default: .seconds(3 * 86_400), in: .seconds(60) ... .seconds(7 * 86_400)))
        try section.finish()
    }
}

extension PasswordPolicy {
    /// `projects[].passwordPolicy`, Firebase's v2 shape: `enforcementState`, `forceUpgradeOnSignin` and
    /// `customStrengthOptions`.
    init(reader section: ConfigReader) throws {
        let state = try section.string("enforcementState", default: "OFF")
        guard let enforcement = Enforcement(rawValue: state) else { throw section.fail("enforcementState", "is ENFORCE or OFF (got '\(state)')") }
        let options = try section.section("customStrengthOptions")
        let minimum = try options.int("minPasswordLength", default: PasswordPolicy.firebaseMinimum, in: 6...30)
        let maximumValue = try options.int("maxPasswordLength", default: 0, in: 0...PasswordPolicy.byteCap)
        let maximum: Int? = maximumValue == 0 ? nil : maximumValue
        if let maximum, maximum < minimum {
            throw options.fail("maxPasswordLength", "is below minPasswordLength (\(minimum))")
        }
        self.init(
            enforcement: enforcement, minLength: minimum, maxLength: maximum,
            requiresLowercase: try options.bool("containsLowercaseCharacter", default: false),
            requiresUppercase: try options.bool("containsUppercaseCharacter", default: false),
            requiresNumeric: try options.bool("containsNumericCharacter", default: false),
            requiresNonAlphanumeric: try options.bool("containsNonAlphanumericCharacter", default: false),
            forceUpgradeOnSignin: try section.bool("forceUpgradeOnSignin", default: false))
        try options.finish()
        try section.finish()
    }
}
