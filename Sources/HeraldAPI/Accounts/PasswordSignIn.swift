import Foundation
import HeraldCore
import Logging
import Metrics

/// Email-and-password accounts: `accounts:signUp` (legacy `signupNewUser`), which also creates anonymous
/// users and links a password to a signed-in one, and `accounts:signInWithPassword` (legacy
/// `verifyPassword`).
///
/// Guessing is limited per address and per client address (`limits.passwordSignInsPerAccount`,
/// `passwordSignInsPerIP`): every attempt spends a slot and a correct password gives its slots back, so
/// only failures count. An unknown address is checked against a decoy hash with Herald's parameters, so
/// it costs the time a known one does; with enumeration protection both answer INVALID_LOGIN_CREDENTIALS.
struct PasswordSignIn: Sendable {
    let store: any AccountStore & RateLimitStore
    let completion: SignInCompletion
    let signedIn: SignedInUser
    let limits: LimitSettings
    let clock: any WallClock
    let logger: Logger

    var limiter: RateLimiter { RateLimiter(store: store) }

    /// Firebase's wording for a locked-out account.
    static let lockedOut =
        "Access to this account has been temporarily disabled due to many failed login attempts. You can immediately restore it by resetting your password or you can try again later."

    // MARK: signUp

    struct SignedUp: Encodable {
        var kind = "identitytoolkit#SignupNewUserResponse"
        var localId: String
        var email: String?
        var displayName: String?
        var idToken: String
        var refreshToken: String
        var expiresIn: String
    }

    func signUp(project: ProjectSettings, body: WireBody, clientKey: String?) async throws -> SignedUp {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        if body.string("localId") != nil { throw HeraldError(.unexpectedParameter, "User ID") }
        let now = clock.now
        let withPassword = body.string("idToken") != nil || body.contains("password") || body.contains("email")
        if withPassword {
            guard let rawEmail = body.string("email") else { throw HeraldError(.missingEmail) }
            guard let password = body.string("password") else { throw HeraldError(.missingPassword) }
            guard project.password.enabled else { throw HeraldError(.operationNotAllowed) }
            guard let email = EmailAddress(rawEmail) else { throw HeraldError(.invalidEmail) }
            if let refusal = project.passwordPolicy.check(password) { throw refusal.error }
            if let idToken = body.string("idToken") {
                return try await link(email: email, password: password, idToken: idToken, displayName: body.string("displayName"), project: project)
            }
            if try await store.user(projectID: project.id, email: email.value) != nil { throw HeraldError(.emailExists) }
            try await admitSignUp(project: project, clientKey: clientKey)
            var user = UserAccount(
                localID: SecureRandom.alphanumeric(28), projectID: project.id, email: email.value, createdAt: now, lastLoginAt: now)
            user.displayName = body.string("displayName")
            user.passwordHash = try await PasswordHash.make(password)
            do {
                try await store.insertUser(user)
            } catch AccountConflict.emailExists {
                throw HeraldError(.emailExists)
            }
            Counter(label: "herald_api_sign_ups_total", dimensions: [("project", project.id), ("kind", "password")]).increment()
            logger.info("password account created", metadata: ["project": .string(project.id), "user": .string(user.localID)])
            return try await answer(for: user, provider: "password")
        }
        guard project.password.anonymous else { throw HeraldError(.adminOnlyOperation) }
        try await admitSignUp(project: project, clientKey: clientKey)
        let user = UserAccount(localID: SecureRandom.alphanumeric(28), projectID: project.id, createdAt: now, lastLoginAt: now)
        try await store.insertUser(user)
        Counter(label: "herald_api_sign_ups_total", dimensions: [("project", project.id), ("kind", "anonymous")]).increment()
        logger.info("anonymous account created", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        return try await answer(for: user, provider: "anonymous")
    }

    /// signUp with an idToken: the email and password become the signed-in user's (an anonymous user
    /// is upgraded). A user may add an address it does not have yet; replacing one goes through the
    /// verify-and-change email.
    private func link(email: EmailAddress, password: String, idToken: String, displayName: String?, project: ProjectSettings) async throws -> SignedUp
    {
        var (user, _) = try await signedIn.resolve(idToken, project: project)
        if let current = user.email, current != email.value {
            throw HeraldError(.operationNotAllowed, "Please verify the new email before changing email.")
        }
        if user.passwordHash != nil { throw HeraldError(.providerAlreadyLinked) }
        if let owner = try await store.user(projectID: project.id, email: email.value), owner.localID != user.localID {
            throw HeraldError(.emailExists)
        }
        user.email = email.value
        if let displayName { user.displayName = displayName }
        user.passwordHash = try await PasswordHash.make(password)
        user.lastLoginAt = clock.now
        completion.revokeEarlierSessions(of: &user)
        do {
            try await store.updateUser(user)
        } catch AccountConflict.emailExists {
            throw HeraldError(.emailExists)
        }
        logger.info("password linked to an account", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        return try await answer(for: user, provider: "password")
    }

    private func admitSignUp(project: ProjectSettings, clientKey: String?) async throws {
        guard let clientKey else { return }
        let checks = limits.signUpsPerIP.map { LimitCheck(kind: .signUp, scope: project.id, subject: clientKey, policy: $0) }
        if let refusal = try await limiter.admit(checks, now: clock.now) {
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            throw HeraldError(.tooManyAttempts, nil, retryAfter: refusal.retryAfter)
        }
    }

    private func answer(for user: UserAccount, provider: String) async throws -> SignedUp {
        let session = try await completion.session(for: user, provider: provider, secondFactor: nil)
        return SignedUp(
            localId: user.localID, email: user.email, displayName: user.displayName, idToken: session.idToken, refreshToken: session.refreshToken,
            expiresIn: session.expiresIn)
    }

    // MARK: signInWithPassword

    struct SignedIn: Encodable, FirstFactorAnswer {
        var kind = "identitytoolkit#VerifyPasswordResponse"
        var localId: String
        var email: String
        var displayName: String?
        var registered = true
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String?
        var mfaPendingCredential: String?
        var mfaInfo: [SignInCompletion.MFAInfo]?
    }

    func signIn(project: ProjectSettings, body: WireBody, clientKey: String?) async throws -> SignedIn {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard project.password.enabled else { throw HeraldError(.passwordLoginDisabled) }
        guard let rawEmail = body.string("email") else { throw HeraldError(.missingEmail) }
        guard let email = EmailAddress(rawEmail) else { throw HeraldError(.invalidEmail) }
        guard let password = body.string("password") else { throw HeraldError(.missingPassword) }

        var checks = limits.passwordSignInsPerAccount.map {
            LimitCheck(kind: .passwordSignIn, scope: project.id, subject: email.mailbox, policy: $0)
        }
        if let clientKey {
            checks += limits.passwordSignInsPerIP.map { LimitCheck(kind: .passwordSignInIP, scope: project.id, subject: clientKey, policy: $0) }
        }
        if let refusal = try await limiter.admit(checks, now: clock.now) {
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            logger.notice(
                "password sign-in refused by a limit",
                metadata: ["project": .string(project.id), "limit": .string(refusal.check.kind.configurationKey), "email": .string(email.masked)])
            throw HeraldError(.tooManyAttempts, Self.lockedOut, retryAfter: refusal.retryAfter)
        }

        let found = try await store.user(projectID: project.id, email: email.value)
        let stored = found?.passwordHash.flatMap(StoredPassword.init(text:))
        // A password over the cap is never hashed (no stored password can be one); every other attempt
        // costs one hash, the decoy's when there is nothing to check against.
        var matched = false
        if password.utf8.count <= PasswordPolicy.byteCap {
            let checkable: StoredPassword? = if case .unverifiable = stored { nil } else { stored }
            let ok = await PasswordHash.verify(password, against: checkable ?? PasswordHash.decoy)
            matched = ok && checkable != nil
        }
        guard matched, var user = found, let stored else {
            Counter(label: "herald_api_password_sign_ins_total", dimensions: [("project", project.id), ("result", "refused")]).increment()
            if project.emailLink.enumerationProtection { throw HeraldError(.invalidLoginCredentials) }
            throw HeraldError(found == nil ? .emailNotFound : .invalidPassword)
        }
        // Only failures count against the limits.
        try? await limiter.refund(checks, now: clock.now)
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        let missing = project.passwordPolicy.upgradeRequired(password)
        if missing.isEmpty == false { throw PasswordPolicy.Refusal.missing(missing).error }
        if PasswordHash.needsRehash(stored) {
            // An imported (or older) hash becomes Herald's own on its first successful use.
            user.passwordHash = try await PasswordHash.make(password)
            logger.info(
                "password hash replaced by Herald's",
                metadata: ["project": .string(project.id), "user": .string(user.localID), "from": .string(stored.algorithm)])
        }
        user.lastLoginAt = clock.now
        try await store.updateUser(user)
        Counter(label: "herald_api_password_sign_ins_total", dimensions: [("project", project.id), ("result", "signed_in")]).increment()
        var answer = SignedIn(localId: user.localID, email: email.value, displayName: user.displayName)
        answer.take(try await completion.complete(user, provider: "password"))
        return answer
    }
}
