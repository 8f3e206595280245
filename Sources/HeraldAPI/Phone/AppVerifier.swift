import Foundation
import HeraldCore
import Logging
import Metrics

/// App verification before any SMS: the silent-push handshake (`verifyClient` issues a receipt and
/// pushes its secret to the device; the next send returns both) and the captcha fallback.
///
/// A class: every send calls it across an `await`, and a struct would be copied at each call, retaining
/// its twenty-odd references (the limits' lists among them): about 1 % of a send's instructions.
final class AppVerifier: Sendable {
    let store: any AppVerificationStore & DeliveryLedger & RateLimitStore
    let publisher: any JobPublisher
    let keys: HeraldKeys
    let limits: LimitSettings
    let captcha: CaptchaVerifier
    let clock: any WallClock
    let logger: Logger
    /// False with `push.provider: none`: no silent push is ever sent, so `verifyClient` answers what
    /// makes the iOS SDK fall back to reCAPTCHA.
    let pushes: Bool

    init(
        store: any AppVerificationStore & DeliveryLedger & RateLimitStore, publisher: any JobPublisher, keys: HeraldKeys,
        limits: LimitSettings, captcha: CaptchaVerifier, clock: any WallClock, logger: Logger, pushes: Bool = true
    ) {
        self.pushes = pushes
        self.store = store
        self.publisher = publisher
        self.keys = keys
        self.limits = limits
        self.captcha = captcha
        self.clock = clock
        self.logger = logger
    }

    /// `verifyClient` / `accounts:verifyIosClient`: returns the receipt and how long the SDK should wait
    /// for the push, once the broker confirmed the push job.
    func verifyIosClient(
        project: ProjectSettings, body: WireBody, bundleID: String?, clientKey: String?, traceparent: TraceParent
    ) async throws -> (receipt: String, suggestedTimeout: String) {
        guard let appToken = body.string("appToken") else { throw HeraldError(.missingIOSAppToken) }
        guard let bundleID, bundleID.isEmpty == false else { throw HeraldError(.missingIOSBundleID) }
        guard pushes else { throw HeraldError(.invalidAppCredential) }
        guard project.iosBundleIds.contains(bundleID) else {
            logger.notice("verifyClient for an unlisted bundle", metadata: ["project": .string(project.id), "bundle": .string(bundleID)])
            throw HeraldError(.invalidAppCredential)
        }
        let token = appToken.lowercased()
        guard token.count >= 32, token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else { throw HeraldError(.invalidAppCredential) }
        let tokenHash = SHA256Hex.digest(token)
        if let reason = try await store.invalidDeviceToken(hash: tokenHash) {
            // APNs refused this token for good; the SDK falls back to reCAPTCHA on this answer.
            logger.info("verifyClient with a device token APNs refused", metadata: ["project": .string(project.id), "reason": .string(reason)])
            throw HeraldError(.invalidAppCredential)
        }
        let now = clock.now
        let limiter = RateLimiter(store: store)
        let checks = LimitCheck.forPush(project: project.id, deviceTokenHash: tokenHash, clientKey: clientKey, limits: limits)
        if let refusal = try await limiter.admit(checks, now: now) {
            logger.notice(
                "push refused by a limit",
                metadata: [
                    "project": .string(project.id), "limit": .string(refusal.check.kind.configurationKey),
                    "policy": .string(refusal.check.policy.description),
                ])
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            throw PhoneSignIn.error(for: refusal)
        }
        let receipt = SecureRandom.base64URL(bytes: 32)
        let secret = SecureRandom.base64URL(bytes: 32)
        let receiptHash = SHA256Hex.digest(receipt)
        let environment: PushMessage.Environment = body.bool("isSandbox") == true ? .sandbox : .production
        let jobID = SecureRandom.uuidV7(at: now)
        let job = Job(
            id: jobID, project: project.id, createdAt: now, expiresAt: now.adding(project.appVerification.pushTTL),
            payload: .push(
                PushMessage(
                    deviceToken: token, environment: environment, topic: bundleID,
                    payload: ["receipt": receipt, "secretSealed": Sealer(key: keys.sealing).seal(secret, jobID: jobID, destination: token)])))
        try await store.insertReceipt(
            AppReceipt(
                receiptHash: receiptHash, projectID: project.id, bundleID: bundleID, secretHash: SHA256Hex.digest(secret),
                deviceTokenHash: tokenHash, createdAt: now))
        try await store.recordPending(jobID: jobID, projectID: project.id, type: .push, destination: tokenHash, now: now)
        do {
            try await publisher.publish(job, traceparent: traceparent)
        } catch {
            try? await store.deleteReceipt(hash: receiptHash)
            try? await store.recordDelivery(jobID: jobID, status: .abandoned, reason: "publish failed: \(error)", now: clock.now)
            try? await limiter.refund(checks, now: now)
            logger.error("push job not confirmed by the broker", metadata: ["project": .string(project.id), "error": .string("\(error)")])
            throw HeraldError(.unavailable, "The verification push could not be queued. Try again later.", retryAfter: .seconds(5))
        }
        Counter(label: "herald_api_push_verifications_total", dimensions: [("project", project.id), ("environment", environment.rawValue)])
            .increment()
        logger.info(
            "silent push queued",
            metadata: [
                "project": .string(project.id), "job.id": .string(jobID.lowercasedText), "environment": .string(environment.rawValue),
            ])
        return (receipt, String(Int(project.appVerification.suggestedTimeout.seconds)))
    }

    /// What a send's app credential proved. `credentialHash` identifies an iOS pair for reentrant sends.
    struct Verdict {
        var credentialHash: String?
        /// A captcha token still to verify (after the reentrancy check: tokens are single-use).
        var pendingCaptcha: String?
    }

    /// Checks the credential a send carries against the project's policy. Captcha tokens are returned
    /// for `verifyCaptcha` so a reentrant send does not spend a fresh token.
    ///
    /// Test numbers, as in Firebase: a send that carries no app credential at all is what the SDKs'
    /// testing mode (`appVerificationDisabledForTesting`, always on with `useEmulator`) sends, and is
    /// accepted for a test number (fictional, fixed code, nothing is sent); a credential a test-number send
    /// does carry is checked like any other, unless `disabledForTesting` skips the check for them entirely.
    func check(project: ProjectSettings, body: WireBody, bundleID: String?, isTestNumber: Bool) async throws -> Verdict {
        let settings = project.appVerification
        guard settings.required, isTestNumber == false || settings.disabledForTesting == false else { return Verdict() }
        guard
            let credential = AppCredential.from(
                iosReceipt: body.string("iosReceipt"), iosSecret: body.string("iosSecret"), recaptchaToken: body.string("recaptchaToken"),
                captchaResponse: body.string("captchaResponse"))
        else { throw HeraldError(.invalidAppCredential) }
        if isTestNumber, case .none = credential { return Verdict() }
        switch credential {
        case .none:
            throw HeraldError(.missingAppCredential)
        case .captcha(let token):
            return Verdict(pendingCaptcha: token)
        case .iosReceipt(let receipt, let secret):
            let receiptHash = SHA256Hex.digest(receipt)
            let stored = try await store.receipt(hash: receiptHash)
            guard
                AppVerificationCheck.receiptIsValid(
                    stored, secret: secret, projectID: project.id, bundleID: bundleID, now: clock.now, ttl: settings.receiptTTL)
            else {
                // The SDK clears its cached pair on this answer and runs the handshake (or reCAPTCHA) again.
                throw HeraldError(.invalidAppCredential)
            }
            return Verdict(credentialHash: receiptHash)
        }
    }

    func verifyCaptcha(_ token: String, project: ProjectSettings, remoteIP: String?) async throws {
        try await captcha.verify(token, remoteIP: remoteIP, settings: project.appVerification)
    }
}
