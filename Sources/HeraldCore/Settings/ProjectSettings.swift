import Foundation

/// `projects[]`: one Firebase-style project each, selected by API key.
public struct ProjectSettings: Sendable {
    public var id: String
    /// The app's name in message templates (`{{app}}`); defaults to the id.
    public var displayName: String
    public var apiKeys: [String]
    public var authorizedDomains: [String]
    /// Every iOS bundle id of the project: `iosBundleIds` (the shorthand) and those of `iosApps`.
    public var iosBundleIds: [String]
    /// `projects[].iosApps`: the project's iOS apps (universal links, the reCAPTCHA fallback's callback).
    public var iosApps: [IOSApp]
    /// `projects[].androidApps`: the project's Android apps (app links).
    public var androidApps: [AndroidApp]
    public var phone: Phone
    public var emailLink: EmailLink
    public var apple: Apple
    public var mfa: MFA
    public var appVerification: AppVerification
    /// `projects[].password`: email-and-password accounts and anonymous ones (`signUp`).
    public var password = Password()
    /// `projects[].passwordPolicy`.
    public var passwordPolicy = PasswordPolicy()

    /// `projects[].password`.
    public struct Password: Sendable {
        /// false: signUp with an email answers OPERATION_NOT_ALLOWED, signInWithPassword and
        /// resetPassword PASSWORD_LOGIN_DISABLED (admins still create and import password users).
        public var enabled: Bool
        /// `signUp` without an email creates an anonymous user; false answers ADMIN_ONLY_OPERATION.
        public var anonymous: Bool
        /// How long the links of the account emails work.
        public var resetLinkTTL: Duration
        public var verifyLinkTTL: Duration

        public init(
            enabled: Bool = true, anonymous: Bool = false, resetLinkTTL: Duration = .seconds(3600), verifyLinkTTL: Duration = .seconds(3 * 86_400)
        ) {
            self.enabled = enabled
            self.anonymous = anonymous
            self.resetLinkTTL = resetLinkTTL
            self.verifyLinkTTL = verifyLinkTTL
        }
    }

    /// An iOS app of the project.
    public struct IOSApp: Sendable, Equatable {
        public var bundleId: String
        /// The Apple developer team (apple-app-site-association names `<teamId>.<bundleId>`).
        public var teamId: String?
        /// `com.googleusercontent.apps.…`: the URL scheme the SDK returns to after the reCAPTCHA page.
        public var reversedClientId: String?
        /// The Firebase app id (`1:123:ios:abc`); the SDK's other callback scheme is `app-1-123-ios-abc`.
        public var appId: String?

        public init(bundleId: String, teamId: String? = nil, reversedClientId: String? = nil, appId: String? = nil) {
            self.bundleId = bundleId
            self.teamId = teamId
            self.reversedClientId = reversedClientId
            self.appId = appId
        }

        /// The URL schemes the app takes the reCAPTCHA result back on, as the iOS SDK builds them.
        public var callbackSchemes: [String] {
            [reversedClientId, appId.map { "app-" + $0.replacingOccurrences(of: ":", with: "-") }].compactMap { $0 }
        }
    }

    /// An Android app of the project.
    public struct AndroidApp: Sendable, Equatable {
        public var packageName: String
        /// SHA-256 fingerprints of the signing certificates (`AB:CD:…`), for assetlinks.json.
        public var sha256CertFingerprints: [String]

        public init(packageName: String, sha256CertFingerprints: [String]) {
            self.packageName = packageName
            self.sha256CertFingerprints = sha256CertFingerprints
        }
    }

    /// `projects[].phone`.
    public struct Phone: Sendable {
        public var enabled: Bool
        public var codeLength: Int
        public var codeTTL: Duration
        public var maxCheckAttempts: Int
        /// Reentrant-send window: a second send for the number with the same app credential within it
        /// gets the open session back and nothing is sent.
        public var resendAfter: Duration
        /// Fictional numbers (E.164) with fixed codes: no SMS, no job.
        public var testNumbers: [String: String]
        /// `testNumbers` may list real numbers (start-up logs a warning for each).
        public var testNumbersAllowReal: Bool
        /// SMS region policy.
        public var regions: Regions
        /// Domain for the origin-bound one-time-code line (`@example.com #123456`) appended to SMS.
        public var originDomain: String?
        /// The app's 11-character Android SMS Retriever hash, appended on its own line.
        public var androidAppHash: String?

        public init(
            enabled: Bool, codeLength: Int, codeTTL: Duration, maxCheckAttempts: Int, resendAfter: Duration, testNumbers: [String: String],
            testNumbersAllowReal: Bool, regions: Regions, originDomain: String?, androidAppHash: String?
        ) {
            self.enabled = enabled
            self.codeLength = codeLength
            self.codeTTL = codeTTL
            self.maxCheckAttempts = maxCheckAttempts
            self.resendAfter = resendAfter
            self.testNumbers = testNumbers
            self.testNumbersAllowReal = testNumbersAllowReal
            self.regions = regions
            self.originDomain = originDomain
            self.androidAppHash = androidAppHash
        }
    }

    /// `projects[].phone.regions`.
    public struct Regions: Sendable {
        public var allow: [String]
        public var deny: [String]

        public init(allow: [String], deny: [String]) {
            self.allow = allow
            self.deny = deny
        }
    }

    /// `projects[].emailLink`: passwordless sign-in by email.
    public struct EmailLink: Sendable {
        /// false answers OPERATION_NOT_ALLOWED.
        public var enabled: Bool
        /// How long a link works (EXPIRED_OOB_CODE after).
        public var linkTTL: Duration
        /// The handler the link points at (Herald's own `/__/auth/action`, or the app's page).
        public var actionUrl: String
        /// createAuthUri answers without revealing whether an address is registered (default on).
        public var enumerationProtection: Bool
        /// Custom URL schemes of the project's apps (`com.example.app`) a continue URL may use besides
        /// http and https.
        public var appSchemes: [String]
        /// Hosts a request may name as `linkDomain` (where the link, and so its code, goes): each
        /// exactly, ASCII and lowercase, besides `actionUrl`'s own host.
        public var linkDomains: [String] = []

        /// True when `host` may carry this project's links: `actionUrl`'s host or a listed link domain.
        public func isLinkDomain(_ host: String) -> Bool {
            URL(string: actionUrl)?.host?.lowercased() == host || linkDomains.contains(host)
        }

        public init(
            enabled: Bool, linkTTL: Duration, actionUrl: String, enumerationProtection: Bool, appSchemes: [String], linkDomains: [String] = []
        ) {
            self.enabled = enabled
            self.linkTTL = linkTTL
            self.actionUrl = actionUrl
            self.enumerationProtection = enumerationProtection
            self.appSchemes = appSchemes
            self.linkDomains = linkDomains
        }
    }

    /// `projects[].apple`: Sign in with Apple (`signInWithIdp`) and token revocation (`revokeToken`).
    public struct Apple: Sendable {
        public var enabled: Bool
        /// Bundle ids and Services ids accepted as an identity token's `aud`; the first is the one
        /// authorization codes are exchanged under unless a revocation names another.
        public var clientIds: [String]
        public var jwksUrl: String
        public var tokenUrl: String
        public var revokeUrl: String
        /// Extra trusted CA (PEM) for the three URLs, for relays and tests.
        public var caFile: String?
        /// The Sign in with Apple key (.p8) for client secrets; all three or none. Without them
        /// `revokeToken` answers OPERATION_NOT_ALLOWED.
        public var teamId: String?
        public var keyId: String?
        public var keyFile: String?

        /// True when client secrets can be minted (revocation possible).
        public var canRevoke: Bool { teamId != nil && keyId != nil && keyFile != nil }

        public init(
            enabled: Bool, clientIds: [String], jwksUrl: String, tokenUrl: String, revokeUrl: String, caFile: String?, teamId: String?,
            keyId: String?, keyFile: String?
        ) {
            self.enabled = enabled
            self.clientIds = clientIds
            self.jwksUrl = jwksUrl
            self.tokenUrl = tokenUrl
            self.revokeUrl = revokeUrl
            self.caFile = caFile
            self.teamId = teamId
            self.keyId = keyId
            self.keyFile = keyFile
        }
    }

    /// `projects[].mfa`: phone as a second factor.
    public struct MFA: Sendable {
        /// `enabled` or `disabled` (OPERATION_NOT_ALLOWED : SMS based MFA not enabled.).
        public var phone: String
        public var phoneEnabled: Bool { phone == "enabled" }

        public init(phone: String) {
            self.phone = phone
        }
    }

    /// `projects[].appVerification`: proof that a send comes from the real app.
    public struct AppVerification: Sendable {
        /// False skips app verification entirely (server-to-server use; weaker).
        public var required: Bool
        /// Test numbers need no app credential.
        public var disabledForTesting: Bool
        /// How long an iOS receipt/secret pair may be reused.
        public var receiptTTL: Duration
        /// `apns-expiration` of the silent push.
        public var pushTTL: Duration
        /// How long the iOS SDK waits for the push (`suggestedTimeout`).
        public var suggestedTimeout: Duration
        /// A siteverify-compatible endpoint (reCAPTCHA, hCaptcha, Turnstile); nil = captcha refused.
        public var captchaVerifyUrl: String?
        public var captchaSecret: String?
        /// Minimum reCAPTCHA-style score, applied only when the answer carries one.
        public var captchaMinScore: Double
        /// The site key of the captcha widget (`captcha.siteKey`). With `widget: recaptchaEnterprise`
        /// `recaptchaConfig` tells SDKs to ENFORCE it.
        public var captchaSiteKey: String?
        /// Which widget the site key belongs to.
        public var captchaWidget: CaptchaWidget
        /// The widget's script, loaded by the reCAPTCHA fallback page (`/__/auth/handler`).
        public var captchaWidgetScriptUrl: String?

        /// A captcha widget: how the fallback page renders it.
        public enum CaptchaWidget: String, Sendable, CaseIterable {
            case recaptcha, recaptchaEnterprise, hcaptcha, turnstile
        }

        /// True when SDKs must send reCAPTCHA Enterprise tokens (`recaptchaConfig` ENFORCE).
        public var enforcesRecaptchaEnterprise: Bool { captchaSiteKey != nil && captchaWidget == .recaptchaEnterprise }

        public init(
            required: Bool, disabledForTesting: Bool, receiptTTL: Duration, pushTTL: Duration, suggestedTimeout: Duration, captchaVerifyUrl: String?,
            captchaSecret: String?, captchaMinScore: Double, captchaSiteKey: String?, captchaWidget: CaptchaWidget, captchaWidgetScriptUrl: String?
        ) {
            self.required = required
            self.disabledForTesting = disabledForTesting
            self.receiptTTL = receiptTTL
            self.pushTTL = pushTTL
            self.suggestedTimeout = suggestedTimeout
            self.captchaVerifyUrl = captchaVerifyUrl
            self.captchaSecret = captchaSecret
            self.captchaMinScore = captchaMinScore
            self.captchaSiteKey = captchaSiteKey
            self.captchaWidget = captchaWidget
            self.captchaWidgetScriptUrl = captchaWidgetScriptUrl
        }
    }

    public init(
        id: String, displayName: String, apiKeys: [String], authorizedDomains: [String], iosBundleIds: [String], iosApps: [IOSApp],
        androidApps: [AndroidApp], phone: Phone, emailLink: EmailLink, apple: Apple, mfa: MFA, appVerification: AppVerification
    ) {
        self.id = id
        self.displayName = displayName
        self.apiKeys = apiKeys
        self.authorizedDomains = authorizedDomains
        self.iosBundleIds = iosBundleIds
        self.iosApps = iosApps
        self.androidApps = androidApps
        self.phone = phone
        self.emailLink = emailLink
        self.apple = apple
        self.mfa = mfa
        self.appVerification = appVerification
    }
}
