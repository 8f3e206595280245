import Foundation
import HeraldCore
import Logging
import Metrics

/// The account emails besides the sign-in link, and what their links do:
///
/// - `sendOobCode` VERIFY_EMAIL (the signed-in user's address), PASSWORD_RESET (by address), and
///   VERIFY_AND_CHANGE_EMAIL (to the new address; the account moves only when the link is opened);
/// - `accounts:update` with `oobCode` (the SDKs' `applyActionCode`) verifies, changes, or recovers the
///   address; a change mails the old address a RECOVER_EMAIL link that puts it back;
/// - `accounts:resetPassword` with `oobCode` tells what a code is for (`checkActionCode`,
///   `verifyPasswordResetCode`), and with `newPassword` sets the password.
///
/// Codes are single use, stored as their hash, with Firebase's lifetimes (`projects[].password`: 1 h for
/// a reset, 3 days for the others). Every code names its user, so a code stops working when the account's
/// address is no longer the one it was sent for.
struct AccountEmails: Sendable {
    let store: any OobCodeStore & AccountStore & RateLimitStore
    let emails: ActionEmailQueue
    let signedIn: SignedInUser
    let completion: SignInCompletion
    let proof: AddressProof
    let limits: LimitSettings
    let devMode: Bool
    let clock: any WallClock
    let logger: Logger

    static let types: Set<String> = ["PASSWORD_RESET", "VERIFY_EMAIL", "VERIFY_AND_CHANGE_EMAIL"]

    /// The link `mode` of each request type.
    static let modes: [String: String] = [
        "EMAIL_SIGNIN": "signIn", "VERIFY_EMAIL": "verifyEmail", "PASSWORD_RESET": "resetPassword",
        "VERIFY_AND_CHANGE_EMAIL": "verifyAndChangeEmail", "RECOVER_EMAIL": "recoverEmail",
    ]

    func sendOobCode(
        requestType: String, project: ProjectSettings, body: WireBody, origin: EmailLinkSignIn.Origin
    ) async throws -> EmailLinkSignIn.Sent {
        guard Self.types.contains(requestType) else {
            if requestType == "RECOVER_EMAIL" || requestType == "REVERT_SECOND_FACTOR_ADDITION" {
                throw HeraldError(.notImplemented, "requestType \(requestType) is sent by Herald itself, never asked for.")
            }
            throw HeraldError(.invalidRequestType)
        }
        let returnLink = body.bool("returnOobLink") == true
        // firebase-admin's generate_*_link names the user by address; everyone else is the idToken's user.
        let byAdmin = returnLink && origin.isAdmin && body.string("idToken") == nil
        let continueURL = try EmailLinkSignIn.continueURL(body.string("continueUrl"), project: project, required: false)
        let actionURL = try EmailLinkSignIn.actionURL(project: project, linkDomain: body.string("linkDomain") ?? body.string("dynamicLinkDomain"))
        let inApp = body.bool("canHandleCodeInApp") == true || body.bool("handleCodeInApp") == true

        var user: UserAccount?
        var recipient: EmailAddress
        var newEmail: EmailAddress?
        switch requestType {
        case "PASSWORD_RESET":
            guard let raw = body.string("email") else { throw HeraldError(.missingEmail) }
            guard let email = EmailAddress(raw) else { throw HeraldError(.invalidEmail) }
            recipient = email
            user = try await store.user(projectID: project.id, email: email.value)
            if user == nil, byAdmin || project.emailLink.enumerationProtection == false { throw HeraldError(.emailNotFound) }
        case "VERIFY_EMAIL":
            let found = try await self.user(byAdmin: byAdmin, body: body, project: project, recent: false)
            guard let address = found.email.flatMap(EmailAddress.init) else { throw HeraldError(.missingEmail) }
            user = found
            recipient = address
        default:  // VERIFY_AND_CHANGE_EMAIL
            guard let raw = body.string("newEmail") else { throw HeraldError(.missingNewEmail) }
            guard let target = EmailAddress(raw) else { throw HeraldError(.invalidEmail) }
            let found = try await self.user(byAdmin: byAdmin, body: body, project: project, recent: true)
            guard found.email != nil else { throw HeraldError(.missingEmail) }
            if let owner = try await store.user(projectID: project.id, email: target.value), owner.localID != found.localID {
                throw HeraldError(.emailExists)
            }
            user = found
            recipient = target
            newEmail = target
        }

        let now = clock.now
        let code = OobCode.generate()
        let codeHash = OobCode.storageHash(code)
        let link = SignInLink(
            actionURL: actionURL, apiKey: origin.apiKey, oobCode: code, continueURL: continueURL?.text,
            languageCode: origin.locale ?? TemplateCatalog.defaultLocale, mode: Self.modes[requestType]!
        ).text
        let ttl = requestType == "PASSWORD_RESET" ? project.password.resetLinkTTL : project.password.verifyLinkTTL
        // The record is of the account's current address; a change's new address travels beside it.
        let record = OobRecord(
            codeHash: codeHash, projectID: project.id, requestType: requestType, email: user?.email ?? recipient.value, createdAt: now,
            expiresAt: now.adding(ttl), linkSealed: emails.sealedForListing(link, codeHash: codeHash, devMode: devMode), localID: user?.localID,
            newEmail: newEmail?.value, inApp: inApp)

        if returnLink, origin.isAdmin {
            try await store.insertOobCode(record)
            logger.info(
                "account email link generated for an admin",
                metadata: ["project": .string(project.id), "type": .string(requestType), "email": .string(recipient.masked)])
            return .init(email: recipient.value, oobCode: code, oobLink: link)
        }
        let queueOrigin = origin.queueOrigin
        // Limits are spent whether or not the address has an account, so they tell nothing either.
        let spent = try await emails.admit(recipient: recipient, project: project, origin: queueOrigin)
        guard user != nil else {
            logger.info("password reset for an unknown address: no email sent", metadata: ["project": .string(project.id)])
            return .init(email: recipient.value)
        }
        var params: [String: String] = [:]
        if requestType == "VERIFY_AND_CHANGE_EMAIL", let old = user?.email { params["oldEmail"] = old }
        let template: EmailMessage.Template =
            switch requestType {
            case "PASSWORD_RESET": .resetPassword
            case "VERIFY_EMAIL": .verifyEmail
            default: .verifyAndChangeEmail
            }
        try await emails.queue(
            record, link: link, to: recipient, template: template, params: params, project: project, origin: queueOrigin, spent: spent)
        return .init(email: recipient.value)
    }

    private func user(byAdmin: Bool, body: WireBody, project: ProjectSettings, recent: Bool) async throws -> UserAccount {
        if byAdmin {
            guard let raw = body.string("email") else { throw HeraldError(.missingEmail) }
            guard let email = EmailAddress(raw) else { throw HeraldError(.invalidEmail) }
            guard let user = try await store.user(projectID: project.id, email: email.value) else { throw HeraldError(.userNotFound) }
            return user
        }
        guard body.string("idToken") != nil else { throw HeraldError(.missingIDToken) }
        return recent
            ? try await signedIn.resolveRecent(body.string("idToken"), project: project).user
            : try await signedIn.resolve(body.string("idToken"), project: project).user
    }

    // MARK: completing

    /// An unspent, unexpired code of this project, and its user while its address is still the one
    /// the code was sent for.
    private func open(_ code: String?, project: ProjectSettings) async throws -> (OobRecord, UserAccount?) {
        guard let code else { throw HeraldError(.missingOobCode) }
        guard let record = try await store.oobCode(hash: OobCode.storageHash(code)), record.projectID == project.id, record.consumedAt == nil
        else { throw HeraldError(.invalidOobCode) }
        guard record.expiresAt > clock.now else { throw HeraldError(.expiredOobCode) }
        var user: UserAccount?
        if let localID = record.localID { user = try await store.user(projectID: project.id, localID: localID) }
        // A recover code is for the address the account was changed to; every other for the one it had.
        let expected = record.requestType == "RECOVER_EMAIL" ? record.newEmail : record.email
        if let found = user, found.email != expected { user = nil }
        return (record, user)
    }

    /// The record of a code that can still be used (for the action pages); throws as the API would.
    func usable(_ code: String, project: ProjectSettings) async throws -> OobRecord {
        let (record, user) = try await open(code, project: project)
        guard user != nil, record.requestType != "EMAIL_SIGNIN" else { throw HeraldError(.invalidOobCode) }
        return record
    }

    private func spend(_ record: OobRecord) async throws {
        guard try await store.consumeOobCode(hash: record.codeHash, at: clock.now) else { throw HeraldError(.invalidOobCode) }
    }

    /// `ResetPasswordResponse`.
    struct Checked: Encodable {
        var kind = "identitytoolkit#ResetPasswordResponse"
        var requestType: String
        var email: String?
        var newEmail: String?
    }

    /// `accounts:resetPassword`: with `newPassword` sets it (PASSWORD_RESET codes only); without, tells what
    /// the code is for and spends nothing.
    func resetPassword(project: ProjectSettings, body: WireBody) async throws -> Checked {
        guard project.password.enabled else { throw HeraldError(.passwordLoginDisabled) }
        let (record, found) = try await open(body.string("oobCode"), project: project)
        guard let newPassword = body.string("newPassword") else {
            // The sign-in address is not revealed for a sign-in code: the app must ask the user for it.
            if record.requestType == "EMAIL_SIGNIN" { return Checked(requestType: record.requestType) }
            guard found != nil else { throw HeraldError(.invalidOobCode) }
            return Checked(requestType: record.requestType, email: record.email, newEmail: record.newEmail)
        }
        guard record.requestType == "PASSWORD_RESET", var user = found else { throw HeraldError(.invalidOobCode) }
        if let refusal = project.passwordPolicy.check(newPassword) { throw refusal.error }
        try await spend(record)
        // Opening the mail proves the address: an account someone else set up on it is taken over.
        try await proof.proved(&user, by: "password reset")
        user.passwordHash = try await PasswordHash.make(newPassword)
        completion.revokeEarlierSessions(of: &user)
        try await store.updateUser(user)
        Counter(label: "herald_api_password_resets_total", dimensions: [("project", project.id)]).increment()
        logger.info("password reset; earlier sessions revoked", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        return Checked(requestType: record.requestType, email: record.email)
    }

    /// `accounts:update` with `oobCode`: applies a VERIFY_EMAIL, VERIFY_AND_CHANGE_EMAIL or RECOVER_EMAIL
    /// code. `origin` is for the recover email a change sends.
    func apply(project: ProjectSettings, body: WireBody, origin: EmailLinkSignIn.Origin) async throws -> Accounts.Updated {
        let (record, found) = try await open(body.string("oobCode"), project: project)
        guard var user = found else { throw HeraldError(.invalidOobCode) }
        switch record.requestType {
        case "VERIFY_EMAIL":
            try await spend(record)
            user.emailVerified = true
        case "VERIFY_AND_CHANGE_EMAIL":
            guard let target = record.newEmail else { throw HeraldError(.invalidOobCode) }
            if let owner = try await store.user(projectID: project.id, email: target), owner.localID != user.localID {
                throw HeraldError(.emailExists)
            }
            try await spend(record)
            user.email = target
            user.emailVerified = true
            completion.revokeEarlierSessions(of: &user)
        case "RECOVER_EMAIL":
            if let owner = try await store.user(projectID: project.id, email: record.email), owner.localID != user.localID {
                throw HeraldError(.emailExists)
            }
            try await spend(record)
            user.email = record.email
            user.emailVerified = true
            completion.revokeEarlierSessions(of: &user)
        default:
            throw HeraldError(.invalidOobCode)
        }
        do {
            try await store.updateUser(user)
        } catch AccountConflict.emailExists {
            throw HeraldError(.emailExists)
        }
        logger.info(
            "action code applied", metadata: ["project": .string(project.id), "user": .string(user.localID), "type": .string(record.requestType)])
        if record.requestType == "VERIFY_AND_CHANGE_EMAIL", let old = EmailAddress(record.email) {
            try await sendRecovery(to: old, user: user, project: project, origin: origin)
        }
        return Accounts.Updated(
            localId: user.localID, email: user.email, emailVerified: user.emailVerified, displayName: user.displayName,
            providerUserInfo: UserInfo(user).providerUserInfo, newEmail: record.requestType == "VERIFY_AND_CHANGE_EMAIL" ? user.email : nil)
    }

    /// The notice to the old address after a change, with a link that puts it back (3 days). The change
    /// stands if this cannot be queued: it was made, and failing it now would leave it unannounced.
    private func sendRecovery(to old: EmailAddress, user: UserAccount, project: ProjectSettings, origin: EmailLinkSignIn.Origin) async throws {
        let now = clock.now
        let code = OobCode.generate()
        let codeHash = OobCode.storageHash(code)
        let link = SignInLink(
            actionURL: project.emailLink.actionUrl, apiKey: origin.apiKey, oobCode: code, continueURL: nil,
            languageCode: origin.locale ?? TemplateCatalog.defaultLocale, mode: "recoverEmail"
        ).text
        let record = OobRecord(
            codeHash: codeHash, projectID: project.id, requestType: "RECOVER_EMAIL", email: old.value, createdAt: now,
            expiresAt: now.adding(project.password.verifyLinkTTL), linkSealed: emails.sealedForListing(link, codeHash: codeHash, devMode: devMode),
            localID: user.localID, newEmail: user.email)
        do {
            try await emails.queue(
                record, link: link, to: old, template: .recoverEmail, params: ["newEmail": user.email ?? ""], project: project,
                origin: origin.queueOrigin, spent: [])
        } catch {
            logger.error(
                "the change notice to the old address could not be queued",
                metadata: ["project": .string(project.id), "user": .string(user.localID), "error": .string("\(error)")])
        }
    }
}
