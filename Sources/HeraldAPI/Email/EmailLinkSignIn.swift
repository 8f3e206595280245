import Foundation
import HeraldCore
import Logging
import Metrics

/// The server side of Firebase email-link sign-in: `sendOobCode` (EMAIL_SIGNIN) stores a hashed,
/// expiring, single-use code and queues the email; `signInWithEmailLink` spends it for a user.
struct EmailLinkSignIn: Sendable {
    let store: any OobCodeStore & AccountStore & DeliveryLedger & RateLimitStore
    let publisher: any JobPublisher
    let keys: HeraldKeys
    let limits: LimitSettings
    let leases: LeasedLimits
    let completion: SignInCompletion
    let signedIn: SignedInUser
    let devMode: Bool
    let clock: any WallClock
    let logger: Logger

    var limiter: RateLimiter { RateLimiter(store: store) }
    var sealer: Sealer { Sealer(key: keys.sealing) }

    /// Where the request came from.
    struct Origin {
        var clientKey: String?
        var locale: String?
        var isAdmin: Bool
        var apiKey: String
        var traceparent: TraceParent
    }

    /// `GetOobConfirmationCodeResponse`; `oobCode`/`oobLink` only for admins asking `returnOobLink`.
    struct Sent: Encodable {
        var kind = "identitytoolkit#GetOobConfirmationCodeResponse"
        var email: String
        var oobCode: String?
        var oobLink: String?
    }

    /// Identity Toolkit's other `requestType`s, which later releases implement.
    static let laterRequestTypes: Set<String> = [
        "PASSWORD_RESET", "VERIFY_EMAIL", "VERIFY_AND_CHANGE_EMAIL", "RECOVER_EMAIL", "REVERT_SECOND_FACTOR_ADDITION",
    ]

    func sendOobCode(project: ProjectSettings, body: WireBody, origin: Origin) async throws -> Sent {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard let requestType = body.string("requestType") else { throw HeraldError(.missingRequestType) }
        let returnLink = body.bool("returnOobLink") == true
        if returnLink, origin.isAdmin == false { throw HeraldError(.insufficientPermission) }
        guard requestType == "EMAIL_SIGNIN" else {
            // Firebase's other action types are later releases (501); anything else is not a request type.
            guard Self.laterRequestTypes.contains(requestType) else { throw HeraldError(.invalidRequestType) }
            throw HeraldError(.notImplemented, "requestType \(WireBody.echoable(requestType)) is not supported by Herald (only EMAIL_SIGNIN).")
        }
        guard project.emailLink.enabled else { throw HeraldError(.operationNotAllowed) }
        guard let rawEmail = body.string("email") else { throw HeraldError(.missingEmail) }
        guard let email = EmailAddress(rawEmail) else { throw HeraldError(.invalidEmail) }
        let continueURL = try Self.continueURL(body.string("continueUrl"), project: project, required: origin.isAdmin == false)
        let actionURL = try Self.actionURL(project: project, linkDomain: body.string("linkDomain") ?? body.string("dynamicLinkDomain"))
        // With canHandleCodeInApp the link names the apps that should open it (`SignInLink.AppSettings`); the
        // action domain serves apple-app-site-association and assetlinks.json for them (WellKnownRoutes).
        let app = try Self.appSettings(body)

        let now = clock.now
        let code = OobCode.generate()
        let codeHash = OobCode.storageHash(code)
        let link = SignInLink(
            actionURL: actionURL, apiKey: origin.apiKey, oobCode: code, continueURL: continueURL?.text,
            languageCode: origin.locale ?? TemplateCatalog.defaultLocale, app: app
        ).text
        var record = OobRecord(
            codeHash: codeHash, projectID: project.id, requestType: requestType, email: email.value, createdAt: now,
            expiresAt: now.adding(project.emailLink.linkTTL),
            linkSealed: devMode ? sealer.seal(link, context: "oob:" + codeHash) : nil)

        if returnLink {
            // firebase-admin's generate_sign_in_with_email_link: the caller delivers the link itself.
            try await store.insertOobCode(record)
            logger.info("email sign-in link generated for an admin", metadata: ["project": .string(project.id), "email": .string(email.masked)])
            return Sent(email: email.value, oobCode: code, oobLink: link)
        }

        let checks = LimitCheck.forEmail(project: project.id, email: email.mailbox, clientKey: origin.clientKey, limits: limits)
        // Limits a leased token covers (the busy client-address and project rows) are spent here.
        let coverage = leases.cover(checks, now: now)
        let refusal: RateLimiter.Refusal?
        do {
            refusal = try await limiter.admit(coverage.storeChecks, now: now)
        } catch {
            leases.giveBack(checks, coverage, now: now)
            throw error
        }
        if let refusal {
            leases.giveBack(checks, coverage, now: now)
            logger.notice(
                "email link refused by a limit",
                metadata: [
                    "project": .string(project.id), "limit": .string(refusal.check.kind.configurationKey),
                    "policy": .string(refusal.check.policy.description), "email": .string(email.masked),
                ])
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            throw HeraldError(refusal.check.kind.refusal, nil, retryAfter: refusal.retryAfter)
        }
        let jobID = SecureRandom.uuidV7(at: now)
        record.jobID = jobID
        let job = Job(
            id: jobID, project: project.id, createdAt: now, expiresAt: record.expiresAt, locale: origin.locale,
            payload: .email(
                EmailMessage(
                    to: email.value, template: .signInLink,
                    params: ["linkSealed": sealer.seal(link, jobID: jobID, destination: email.value), "app": project.displayName])))
        try await store.insertOobCode(record)
        try await store.recordPending(jobID: jobID, projectID: project.id, type: .email, destination: email.value, now: now)
        do {
            try await publisher.publish(job, traceparent: origin.traceparent)
        } catch {
            try? await store.deleteOobCode(hash: codeHash)
            try? await store.recordDelivery(jobID: jobID, status: .abandoned, reason: "publish failed: \(error)", now: clock.now)
            // Every limit was spent in the store, the covered ones by their lease: each goes back there.
            try? await limiter.refund(checks, now: clock.now)
            logger.error(
                "email job not confirmed by the broker",
                metadata: ["project": .string(project.id), "job.id": .string(jobID.lowercasedText), "error": .string("\(error)")])
            throw HeraldError(.unavailable, "The sign-in email could not be queued for delivery. Try again later.", retryAfter: .seconds(5))
        }
        Counter(label: "herald_api_email_links_total", dimensions: [("project", project.id)]).increment()
        logger.info(
            "email sign-in link queued",
            metadata: [
                "project": .string(project.id), "job.id": .string(jobID.lowercasedText), "email": .string(email.masked),
                "traceparent": .string(origin.traceparent.description),
            ])
        return Sent(email: email.value)
    }

    /// `EmailLinkSigninResponse`, or the second-factor challenge.
    struct SignedIn: Encodable, FirstFactorAnswer {
        var kind = "identitytoolkit#EmailLinkSigninResponse"
        var email: String
        var localId: String
        var isNewUser: Bool
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String?
        var mfaPendingCredential: String?
        var mfaInfo: [SignInCompletion.MFAInfo]?
    }

    func signIn(project: ProjectSettings, body: WireBody) async throws -> SignedIn {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard project.emailLink.enabled else { throw HeraldError(.operationNotAllowed) }
        guard let rawEmail = body.string("email") else { throw HeraldError(.missingEmail) }
        guard let code = body.string("oobCode") else { throw HeraldError(.missingOobCode) }
        let codeHash = OobCode.storageHash(code)
        guard let record = try await store.oobCode(hash: codeHash), record.projectID == project.id, record.requestType == "EMAIL_SIGNIN",
            record.consumedAt == nil
        else { throw HeraldError(.invalidOobCode) }
        guard EmailAddress(rawEmail)?.value == record.email else {
            throw HeraldError(.invalidEmail, "The email provided does not match the sign-in email address.")
        }
        let now = clock.now
        guard record.expiresAt > now else { throw HeraldError(.expiredOobCode) }
        // A signed-in caller links the address to itself; checked before the code is spent, so a refused
        // link can still sign in to the address's own account.
        var linking: UserAccount?
        if let idToken = body.string("idToken") {
            let (user, token) = try await signedIn.resolve(idToken, project: project)
            // Replacing the account's address is an email change: it needs a recent sign-in.
            if let current = user.email, current != record.email { try signedIn.requireRecent(token) }
            linking = user
        }
        if let linking, let owner = try await store.user(projectID: project.id, email: record.email), owner.localID != linking.localID {
            throw HeraldError(.emailExists)
        }
        guard try await store.consumeOobCode(hash: codeHash, at: now) else { throw HeraldError(.invalidOobCode) }

        let (user, created) = try await account(for: record.email, linkingTo: linking, project: project, now: now)
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        Counter(label: "herald_api_email_sign_ins_total", dimensions: [("project", project.id)]).increment()
        logger.info(
            "email-link sign-in",
            metadata: [
                "project": .string(project.id), "user": .string(user.localID), "new": .stringConvertible(created),
                "linked": .stringConvertible(linking != nil),
            ])
        var answer = SignedIn(email: record.email, localId: user.localID, isNewUser: created)
        answer.take(try await completion.complete(user, provider: "password"))
        return answer
    }

    /// The account the link signs in: the linking user, the address's user, or a new one. Proving
    /// control of an address that an account holds unverified unlinks the account's other credentials
    /// (password, phone, second factors) and revokes its earlier sessions (someone else may have set it up).
    private func account(
        for email: String, linkingTo linking: UserAccount?, project: ProjectSettings, now: Date
    ) async throws -> (UserAccount, Bool) {
        if var user = linking {
            // Replacing a proven address is an email change: earlier sessions end (the answer carries new ones).
            if let previous = user.email, previous != email { completion.revokeEarlierSessions(of: &user) }
            user.email = email
            user.emailVerified = true
            user.emailLinkSignin = true
            user.lastLoginAt = now
            do {
                try await store.updateUser(user)
            } catch AccountConflict.emailExists {
                throw HeraldError(.emailExists)
            }
            return (user, false)
        }
        if var user = try await store.user(projectID: project.id, email: email) {
            if user.emailVerified == false {
                // Someone put this address on the account without proving it (an admin import, or an
                // attacker pre-registering it). The proof wins, as in Firebase: every other way into the
                // account (password, phone, second factors, a linked Apple account) is removed and its
                // sessions revoked, so whoever set it up keeps nothing.
                let hadOtherCredentials =
                    user.passwordHash != nil || user.phoneNumber != nil || user.mfaEnrollments.isEmpty == false || user.identities.isEmpty == false
                user.passwordHash = nil
                user.phoneNumber = nil
                for enrollment in user.mfaEnrollments {
                    _ = try await store.removeMFAEnrollment(projectID: project.id, localID: user.localID, enrollmentID: enrollment.enrollmentID)
                }
                user.mfaEnrollments = []
                for identity in user.identities {
                    _ = try await store.unlinkIdentity(projectID: project.id, localID: user.localID, providerID: identity.providerID)
                }
                user.identities = []
                completion.revokeEarlierSessions(of: &user)
                logger.notice(
                    "email link proved an unverified address: other credentials unlinked, earlier sessions revoked",
                    metadata: ["project": .string(project.id), "user": .string(user.localID), "unlinked": .stringConvertible(hadOtherCredentials)])
            }
            user.emailVerified = true
            user.emailLinkSignin = true
            user.lastLoginAt = now
            try await store.updateUser(user)
            return (user, false)
        }
        let user = UserAccount(
            localID: SecureRandom.alphanumeric(28), projectID: project.id, email: email, emailVerified: true, emailLinkSignin: true,
            createdAt: now, lastLoginAt: now)
        do {
            try await store.insertUser(user)
            return (user, true)
        } catch AccountConflict.emailExists {
            // Another request created it a moment ago: sign in to that one.
            return try await account(for: email, linkingTo: nil, project: project, now: now)
        }
    }

    /// ActionCodeSettings' app fields, when the link is to be handled in the app (`canHandleCodeInApp`).
    static func appSettings(_ body: WireBody) throws(HeraldError) -> SignInLink.AppSettings? {
        guard body.bool("canHandleCodeInApp") == true || body.bool("handleCodeInApp") == true else { return nil }
        func identifier(_ name: String) throws(HeraldError) -> String? {
            guard let value = body.string(name) else { return nil }
            guard value.count <= 255, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
                throw HeraldError(.invalidArgument, "\(name) is not a bundle id or package name.")
            }
            return value
        }
        let settings = SignInLink.AppSettings(
            iosBundleId: try identifier("iOSBundleId"), androidPackageName: try identifier("androidPackageName"),
            androidInstallApp: body.bool("androidInstallApp") ?? false, androidMinimumVersion: try identifier("androidMinimumVersion"))
        return settings.iosBundleId == nil && settings.androidPackageName == nil ? nil : settings
    }

    /// The continue URL, checked against the project's authorized domains.
    static func continueURL(_ text: String?, project: ProjectSettings, required: Bool) throws(HeraldError) -> ContinueURL? {
        guard let text else {
            if required { throw HeraldError(.missingContinueURI) }
            return nil
        }
        do {
            return try ContinueURL(text, authorizedDomains: project.authorizedDomains, appSchemes: project.emailLink.appSchemes)
        } catch {
            switch error {
            case .malformed: throw HeraldError(.invalidContinueURI, "((expected an absolute URI with valid scheme and host))")
            case .unauthorized: throw HeraldError(.unauthorizedDomain, "Domain not allowlisted by project")
            }
        }
    }

    /// The handler the link points at: `emailLink.actionUrl`, or the same path on `linkDomain`, which must
    /// be `actionUrl`'s host or one of `emailLink.linkDomains`, exactly: the link's host receives its code,
    /// so the requester may not pick any host under an authorized domain.
    static func actionURL(project: ProjectSettings, linkDomain: String?) throws(HeraldError) -> String {
        guard let linkDomain else { return project.emailLink.actionUrl }
        let host = linkDomain.lowercased()
        guard host.utf8.allSatisfy({ $0 < 0x80 }), project.emailLink.isLinkDomain(host) else {
            throw HeraldError(.unauthorizedDomain, "Domain not allowlisted by project")
        }
        let path = URL(string: project.emailLink.actionUrl)?.path ?? "/__/auth/action"
        return "https://\(host)\(path.isEmpty ? "/__/auth/action" : path)"
    }
}
