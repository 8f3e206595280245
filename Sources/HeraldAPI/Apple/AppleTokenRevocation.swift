import Crypto
import Foundation
import HeraldCore
import Logging
import Metrics

/// `POST /v2/accounts:revokeToken` for Apple, as the iOS SDK calls it before deleting an account
/// (`Auth.revokeToken(withAuthorizationCode:)`): `{providerId: "apple.com", tokenType: "CODE" | 3,
/// token: <authorization code>, idToken, redirectUri?}`. The signed-in user's code is sealed into an
/// `apple` job for herald-apple-worker, and the answer (`{}`) comes once the broker confirmed it.
///
/// The code is exchanged under the project's first `clientIds` entry unless the request says which:
/// the `clientId` field (a Herald extension), else the `X-Ios-Bundle-Identifier` header the iOS SDK
/// sends, when either is one of `clientIds`. A refresh token (`tokenType: REFRESH_TOKEN` or 1) is
/// revoked directly.
///
/// Each revocation is a call to Apple under the project's key, so requests are limited per user
/// (`limits.revocationsPerUser`) and per client address (`limits.revocationsPerIP`), refused for
/// accounts of a test number (whose fixed code anyone testing the app may know), and queued once per
/// user and token: the job id is derived from both, and a request whose job is already recorded
/// answers `{}` without a second job (unless the first was never confirmed by the broker).
struct AppleTokenRevocation: Sendable {
    let store: any DeliveryLedger & RateLimitStore
    let limits: LimitSettings
    let publisher: any JobPublisher
    let signedIn: SignedInUser
    let keys: HeraldKeys
    let clock: any WallClock
    let logger: Logger

    /// Authorization codes live five minutes at Apple; a job older than that could only fail.
    static let codeLifetime: TimeInterval = 300
    /// A refresh token does not expire by itself: its job is retried for a week.
    static let refreshTokenLifetime: TimeInterval = 7 * 86_400

    func revoke(
        project: ProjectSettings, body: WireBody, bundleID: String?, clientKey: String?, traceparent: TraceParent
    ) async throws -> [String: String] {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard body.string("providerId") == AppleSignIn.providerID else {
            throw HeraldError(.invalidProviderID, "Only apple.com tokens can be revoked.")
        }
        let isCode: Bool
        switch body.string("tokenType") {
        case "CODE", "3": isCode = true
        case "REFRESH_TOKEN", "1": isCode = false
        default: throw HeraldError(.invalidArgument, "tokenType must be CODE (3) or REFRESH_TOKEN (1).")
        }
        guard let token = body.string("token") else { throw HeraldError(.invalidArgument, "token is required.") }
        guard token.utf8.count <= 4096 else { throw HeraldError(.invalidArgument, "token is too long.") }
        guard project.apple.enabled, project.apple.canRevoke else { throw HeraldError(.operationNotAllowed) }
        let user = try await signedIn.resolve(body.string("idToken"), project: project).user
        if let phone = user.phoneNumber, project.phone.testNumbers[phone] != nil {
            throw HeraldError(.operationNotAllowed, "Accounts of test phone numbers cannot revoke Apple tokens.")
        }
        let clientID: String
        if let named = body.string("clientId") {
            guard project.apple.clientIds.contains(named) else { throw HeraldError(.invalidArgument, "clientId is not one of the project's.") }
            clientID = named
        } else if let bundleID, project.apple.clientIds.contains(bundleID) {
            clientID = bundleID
        } else {
            clientID = project.apple.clientIds[0]
        }
        let redirectURI = body.string("redirectUri")
        if let redirectURI {
            guard let url = URLComponents(string: redirectURI), url.scheme == "https", url.host?.isEmpty == false else {
                throw HeraldError(.invalidArgument, "redirectUri must be an https URL.")
            }
        }

        var checks = limits.revocationsPerUser.map { LimitCheck(kind: .revocation, scope: project.id, subject: user.localID, policy: $0) }
        if let clientKey {
            checks += limits.revocationsPerIP.map { LimitCheck(kind: .revocationIP, scope: project.id, subject: clientKey, policy: $0) }
        }
        if let refusal = try await RateLimiter(store: store).admit(checks, now: clock.now) {
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            throw HeraldError(refusal.check.kind.refusal, nil, retryAfter: refusal.retryAfter)
        }

        let now = clock.now
        let jobID = Self.jobID(project: project.id, user: user.localID, isCode: isCode, token: token, key: keys.codeHashing)
        switch try await store.recordPendingOnce(jobID: jobID, projectID: project.id, type: .apple, destination: user.localID, now: now) {
        case nil:
            break
        case .abandoned?:
            // Recorded before, but the broker never confirmed the job: queued again under the same id.
            try await store.recordDelivery(jobID: jobID, status: .pending, reason: "queued again", now: now)
        case let status?:
            logger.info(
                "Apple token revocation already queued",
                metadata: [
                    "project": .string(project.id), "user": .string(user.localID), "job.id": .string(jobID.lowercasedText),
                    "status": .string(status.rawValue),
                ])
            return [:]
        }
        let sealed = Sealer(key: keys.sealing).seal(token, jobID: jobID, destination: user.localID)
        let job = Job(
            id: jobID, project: project.id, createdAt: now,
            expiresAt: now.addingTimeInterval(isCode ? Self.codeLifetime : Self.refreshTokenLifetime),
            payload: .apple(
                AppleMessage(
                    user: user.localID, clientId: clientID, redirectUri: redirectURI,
                    params: [isCode ? "authorizationCodeSealed" : "refreshTokenSealed": sealed])))
        do {
            try await publisher.publish(job, traceparent: traceparent)
        } catch {
            try? await store.recordDelivery(jobID: jobID, status: .abandoned, reason: "publish failed: \(error)", now: clock.now)
            logger.error(
                "Apple revocation job not confirmed by the broker",
                metadata: ["project": .string(project.id), "job.id": .string(jobID.lowercasedText), "error": .string("\(error)")])
            throw HeraldError(.unavailable, "The revocation could not be queued. Try again later.", retryAfter: .seconds(5))
        }
        Counter(label: "herald_api_apple_revocations_total", dimensions: [("project", project.id)]).increment()
        logger.info(
            "Apple token revocation queued",
            metadata: [
                "project": .string(project.id), "user": .string(user.localID), "job.id": .string(jobID.lowercasedText),
                "client": .string(clientID), "traceparent": .string(traceparent.description),
            ])
        return [:]
    }

    /// The job id of revoking `token` for `user`: an HMAC of both (the token cannot be read back from
    /// it), as a version-8 UUID.
    static func jobID(project: String, user: String, isCode: Bool, token: String, key: SymmetricKey) -> UUID {
        let input = ["apple-revocation", project, user, isCode ? "code" : "refresh", token].joined(separator: "\u{0}")
        var bytes = Array(HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: key).prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11],
                bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
