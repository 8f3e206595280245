import Foundation

/// What `verifyClient` issued: the receipt the silent push carries and the secret it delivers, kept
/// only as hashes, so the next `sendVerificationCode` can prove it came from the app that got the push.
public struct AppReceipt: Sendable, Equatable {
    /// SHA-256 of the receipt.
    public var receiptHash: String
    public var projectID: String
    public var bundleID: String
    /// SHA-256 of the secret.
    public var secretHash: String
    /// SHA-256 of the APNs device token it went to.
    public var deviceTokenHash: String
    public var createdAt: Date

    public init(receiptHash: String, projectID: String, bundleID: String, secretHash: String, deviceTokenHash: String, createdAt: Date) {
        self.receiptHash = receiptHash
        self.projectID = projectID
        self.bundleID = bundleID
        self.secretHash = secretHash
        self.deviceTokenHash = deviceTokenHash
        self.createdAt = createdAt
    }
}

/// The app credential a send carries (Identity Toolkit fields `iosReceipt`+`iosSecret`,
/// `recaptchaToken` or `captchaResponse`).
public enum AppCredential: Sendable, Equatable {
    case iosReceipt(receipt: String, secret: String)
    case captcha(token: String)
    case none

    /// Reads the credential fields; a receipt without its secret (or the reverse) counts as invalid.
    public static func from(iosReceipt: String?, iosSecret: String?, recaptchaToken: String?, captchaResponse: String?) -> AppCredential? {
        switch (iosReceipt, iosSecret) {
        case (let receipt?, let secret?): return .iosReceipt(receipt: receipt, secret: secret)
        case (.some, nil), (nil, .some): return nil
        case (nil, nil): break
        }
        // "NO_RECAPTCHA" is what the iOS SDK sends in reCAPTCHA Enterprise audit mode when it has no token.
        if let token = captchaResponse, token != "NO_RECAPTCHA" { return .captcha(token: token) }
        if let token = recaptchaToken { return .captcha(token: token) }
        return AppCredential.none
    }
}

/// Pure checks of app credentials.
public enum AppVerificationCheck {
    /// True when the receipt was issued for this project (and bundle, when the request names one),
    /// is younger than `ttl`, and `secret` is the one the push carried (compared in constant time).
    public static func receiptIsValid(
        _ stored: AppReceipt?, secret: String, projectID: String, bundleID: String?, now: Date, ttl: Duration
    ) -> Bool {
        guard let stored, stored.projectID == projectID, now < stored.createdAt.adding(ttl) else { return false }
        if let bundleID, bundleID != stored.bundleID { return false }
        return constantTimeEquals(Array(SHA256Hex.digest(secret).utf8), Array(stored.secretHash.utf8))
    }

    /// The verdict of a siteverify answer: success, and a score at or above `minScore` when it carries one.
    public static func captchaPasses(success: Bool, score: Double?, minScore: Double) -> Bool {
        guard success else { return false }
        guard let score else { return true }
        return score >= minScore
    }
}
