import Foundation
import HeraldCore
import Logging
import Metrics

/// The server side of Firebase email-link sign-in: `sendOobCode` (EMAIL_SIGNIN) stores a hashed,
/// expiring, single-use code and queues the email; `signInWithEmailLink` spends it for a user.
struct EmailLinkSignIn: Sendable {
    let store: any OobCodeStore & AccountStore
    let emails: ActionEmailQueue
    let accountEmails: AccountEmails
    let completion: SignInCompletion
    let proof: AddressProof
    let signedIn: SignedInUser
    let devMode: Bool
    let clock: any WallClock
    let logger: Logger

    /// Where the request came from.
    struct Origin {
        var clientKey: String?
        var locale: String?
        var isAdmin: Bool
        var apiKey: String
        var traceparent: TraceParent

        var queueOrigin: ActionEmailQueue.Origin { .init(clientKey: clientKey, locale: locale, traceparent: traceparent) }
    }

    /// `GetOobConfirmationCodeResponse`; `oobCode`/`oobLink` only for admins asking `returnOobLink`.
    struct Sent: Encodable {
        var kind = "identitytoolkit#GetOobConfirmationCodeResponse"
        var email: String
        var oobCode: String?
        var oobLink: String?
    }

    func sendOobCode(project: ProjectSettings, body: WireBody, origin: Origin) async throws -> Sent {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard let requestType = body.string("requestType") else { throw HeraldError(.missingRequestType) }
        let returnLink = body.bool("returnOobLink") == true
        if returnLink, origin.isAdmin == false { throw HeraldError(.insufficientPermission) }
        guard requestType == "EMAIL_SIGNIN" else {
            return try await accountEmails.sendOobCode(requestType: requestType, project: project, body: body, origin: origin)
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
        let record = OobRecord(
            codeHash: codeHash, projectID: project.id, requestType: requestType, email: email.value, createdAt: now,
            expiresAt: now.adding(project.emailLink.linkTTL), linkSealed: emails.sealedForListing(link, codeHash: codeHash, devMode: devMode))

        if returnLink {
            // firebase-admin's generate_sign_in_with_email_link: the caller delivers the link itself.
            try await store.insertOobCode(record)
            logger.info("email sign-in link generated for an admin", metadata: ["project": .string(project.id), "email": .string(email.masked)])
            return Sent(email: email.value, oobCode: code, oobLink: link)
        }
        let queueOrigin = origin.queueOrigin
        let spent = try await emails.admit(recipient: email, project: project, origin: queueOrigin)
        try await emails.queue(record, link: link, to: email, template: .signInLink, project: project, origin: queueOrigin, spent: spent)
        Counter(label: "herald_api_email_links_total", dimensions: [("project", project.id)]).increment()
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
    /// control of an address that an account holds unverified takes the account over (`AddressProof`).
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
            try await proof.proved(&user, by: "email link")
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
