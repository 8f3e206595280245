import Foundation
import HeraldCore
import Logging
import Metrics

/// The account operations SDKs and firebase-admin use: `createAuthUri`, `lookup`, `update`, `delete`,
/// and the admin-only create and batchGet. End users act on themselves through an ID token; admins
/// (bearer token from `admin.tokens`) act on any user by localId.
struct Accounts: Sendable {
    let store: any AccountStore & RateLimitStore
    let signedIn: SignedInUser
    let completion: SignInCompletion
    let limits: LimitSettings
    let clock: any WallClock
    let logger: Logger

    var limiter: RateLimiter { RateLimiter(store: store) }

    /// Refuses with TOO_MANY_ATTEMPTS_TRY_LATER (and Retry-After) when `checks` are exhausted.
    private func admit(_ checks: [LimitCheck], project: ProjectSettings) async throws {
        guard let refusal = try await limiter.admit(checks, now: clock.now) else { return }
        Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
            .increment()
        throw HeraldError(refusal.check.kind.refusal, nil, retryAfter: refusal.retryAfter)
    }

    // MARK: createAuthUri

    struct AuthURI: Encodable {
        var kind = "identitytoolkit#CreateAuthUriResponse"
        var registered: Bool?
        var allProviders: [String]?
        var signinMethods: [String]?
        var sessionId: String
    }

    /// `fetchSignInMethodsForEmail`. With `emailLink.enumerationProtection` (the default) the answer is the
    /// same for every address, registered or not; either way lookups are limited per client address
    /// (`limits.lookupsPerIP`).
    func createAuthUri(project: ProjectSettings, body: WireBody, clientKey: String?) async throws -> AuthURI {
        if body.string("providerId") != nil { throw HeraldError(.notImplemented, "createAuthUri with providerId is not supported by Herald.") }
        guard let identifier = body.string("identifier") else { throw HeraldError(.missingIdentifier) }
        guard let continueURI = body.string("continueUri") else { throw HeraldError(.missingContinueURI) }
        guard let email = EmailAddress(identifier) else { throw HeraldError(.invalidIdentifier) }
        guard URL(string: continueURI)?.scheme != nil, URL(string: continueURI)?.host != nil else {
            throw HeraldError(.invalidContinueURI)
        }
        if let clientKey {
            try await admit(
                limits.lookupsPerIP.map { LimitCheck(kind: .lookup, scope: project.id, subject: clientKey, policy: $0) }, project: project)
        }
        let sessionID = SecureRandom.alphanumeric(27)
        if project.emailLink.enumerationProtection { return AuthURI(sessionId: sessionID) }
        guard let user = try await store.user(projectID: project.id, email: email.value) else {
            return AuthURI(registered: false, sessionId: sessionID)
        }
        var methods: [String] = []
        var providers: [String] = []
        if user.passwordHash != nil { methods.append("password") }
        if user.emailLinkSignin { methods.append("emailLink") }
        if methods.isEmpty == false { providers.append("password") }
        for identity in user.identities {
            methods.append(identity.providerID)
            providers.append(identity.providerID)
        }
        return AuthURI(registered: true, allProviders: providers.isEmpty ? nil : providers, signinMethods: methods, sessionId: sessionID)
    }

    // MARK: lookup

    struct LookedUp: Encodable {
        var kind = "identitytoolkit#GetAccountInfoResponse"
        var users: [UserInfo]?
    }

    /// End users: `{idToken}`. Admins: any of `localId[]`, `email[]`, `phoneNumber[]`.
    func lookup(project: ProjectSettings, body: WireBody, isAdmin: Bool) async throws -> LookedUp {
        if isAdmin, body.string("idToken") == nil {
            var found: [String: UserAccount] = [:]
            var order: [String] = []
            func add(_ user: UserAccount?) {
                guard let user, found[user.localID] == nil else { return }
                found[user.localID] = user
                order.append(user.localID)
            }
            for id in body.strings("localId") { add(try await store.user(projectID: project.id, localID: id)) }
            for email in body.strings("email") {
                if let address = EmailAddress(email) { add(try await store.user(projectID: project.id, email: address.value)) }
            }
            for phone in body.strings("phoneNumber") { add(try await store.user(projectID: project.id, phoneNumber: phone)) }
            let users = order.compactMap { found[$0] }.map(UserInfo.init)
            return LookedUp(users: users.isEmpty ? nil : users)
        }
        let (user, _) = try await signedIn.resolve(body.string("idToken"), project: project)
        return LookedUp(users: [UserInfo(user)])
    }

    // MARK: delete

    func delete(project: ProjectSettings, body: WireBody, isAdmin: Bool) async throws -> [String: String] {
        let localID: String
        if isAdmin, body.string("idToken") == nil {
            guard let id = body.string("localId") else { throw HeraldError(.missingLocalID) }
            localID = id
        } else {
            localID = try await signedIn.resolveRecent(body.string("idToken"), project: project).user.localID
        }
        guard try await store.deleteUser(projectID: project.id, localID: localID) else { throw HeraldError(.userNotFound) }
        logger.info(
            "account deleted", metadata: ["project": .string(project.id), "user": .string(localID), "by": .string(isAdmin ? "admin" : "user")])
        return ["kind": "identitytoolkit#DeleteAccountResponse"]
    }

    // MARK: update

    struct Updated: Encodable {
        var kind = "identitytoolkit#SetAccountInfoResponse"
        var localId: String
        var email: String?
        var emailVerified: Bool
        var displayName: String?
        var providerUserInfo: [UserInfo.ProviderInfo]
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String?
        /// The address an applied VERIFY_AND_CHANGE_EMAIL code moved the account to.
        var newEmail: String?
    }

    /// The fields SDKs and firebase-admin send: displayName, email, password, deleteAttribute[],
    /// deleteProvider[] (`phone`, `password`, `apple.com`); admins also phoneNumber, emailVerified, disableUser,
    /// validSince (firebase-admin's revoke_refresh_tokens), customAttributes (set_custom_user_claims).
    func update(project: ProjectSettings, body: WireBody, isAdmin: Bool) async throws -> Updated {
        var user: UserAccount
        var caller: TokenIssuer.Verified?
        if isAdmin, body.string("idToken") == nil {
            guard let id = body.string("localId") else { throw HeraldError(.missingLocalID) }
            guard let found = try await store.user(projectID: project.id, localID: id) else { throw HeraldError(.userNotFound) }
            user = found
        } else {
            guard body.string("idToken") != nil else {
                throw HeraldError(.invalidRequestType, "Unsupported request parameters.")
            }
            (user, caller) = try await signedIn.resolve(body.string("idToken"), project: project)
            for adminOnly in ["phoneNumber", "emailVerified", "disableUser", "validSince", "customAttributes"] where body.contains(adminOnly) {
                throw HeraldError(.insufficientPermission)
            }
            // How the account signs in may change only right after a sign-in (Firebase's recent-login rule).
            if let caller, body.contains("email") || body.contains("password") || body.strings("deleteProvider").isEmpty == false {
                try signedIn.requireRecent(caller)
            }
        }
        // Any change to how the account signs in revokes its earlier sessions (as Firebase does); the
        // caller gets fresh tokens below.
        var credentialsChanged = false
        if let name = body.string("displayName") { user.displayName = name }
        for attribute in body.strings("deleteAttribute") {
            switch attribute {
            case "DISPLAY_NAME": user.displayName = nil
            case "PHOTO_URL": break
            default: throw HeraldError(.invalidArgument, "Unsupported deleteAttribute \(WireBody.echoable(attribute)).")
            }
        }
        for provider in body.strings("deleteProvider") {
            switch provider {
            case "phone":
                credentialsChanged = credentialsChanged || user.phoneNumber != nil
                user.phoneNumber = nil
            case "password":
                credentialsChanged = credentialsChanged || user.passwordHash != nil || user.emailLinkSignin
                user.passwordHash = nil
                user.emailLinkSignin = false
            case AppleSignIn.providerID:
                if try await store.unlinkIdentity(projectID: project.id, localID: user.localID, providerID: provider) {
                    credentialsChanged = true
                    user.identities.removeAll { $0.providerID == provider }
                }
            default: break
            }
        }
        if body.contains("email") {
            guard let email = EmailAddress(body.string("email")) else { throw HeraldError(.invalidEmail) }
            if email.value != user.email {
                // A user may not claim an address it has not proven: that is how accounts get pre-hijacked.
                // Users link a new address with an email link (signInWithEmailLink with their idToken).
                guard isAdmin, caller == nil else {
                    throw HeraldError(.operationNotAllowed, "Please verify the new email before changing email.")
                }
                user.email = email.value
                user.emailVerified = false
                credentialsChanged = true
            }
        }
        if let password = body.string("password") {
            if let refusal = project.passwordPolicy.check(password) { throw refusal.error }
            if caller != nil {
                let checks = limits.passwordChangesPerUser.map { LimitCheck(kind: .password, scope: project.id, subject: user.localID, policy: $0) }
                try await admit(checks, project: project)
            }
            user.passwordHash = try await PasswordHash.make(password)
            credentialsChanged = true
        }
        if isAdmin {
            if body.contains("phoneNumber") {
                let phone = try body.string("phoneNumber").map { try PhoneSignIn.parsePhone($0).e164 }
                if phone != user.phoneNumber {
                    credentialsChanged = true
                    // An admin's number is not proven by an SMS.
                    user.phoneProven = false
                }
                user.phoneNumber = phone
            }
            if let verified = body.bool("emailVerified") { user.emailVerified = verified }
            if let disabled = body.bool("disableUser") { user.disabled = disabled }
            if let seconds = body.string("validSince").flatMap(Double.init) { user.validSince = Date(timeIntervalSince1970: seconds) }
            // firebase-admin sends the claims as a JSON string; "{}" removes them. Tokens issued from now on carry them.
            if body.contains("customAttributes") { user.customAttributes = try CustomClaims.validated(body.jsonText("customAttributes") ?? "{}") }
        }
        if credentialsChanged { completion.revokeEarlierSessions(of: &user) }
        do {
            try await store.updateUser(user)
        } catch let conflict as AccountConflict {
            throw Self.error(for: conflict)
        }
        if credentialsChanged {
            logger.info("credentials changed; earlier sessions revoked", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        }
        var answer = Updated(
            localId: user.localID, email: user.email, emailVerified: user.emailVerified, displayName: user.displayName,
            providerUserInfo: UserInfo(user).providerUserInfo)
        if credentialsChanged, let caller {
            // The caller's own tokens were revoked with the rest: it gets fresh ones, as Identity Toolkit does.
            let session = try await completion.session(for: user, provider: caller.provider, secondFactor: nil)
            answer.idToken = session.idToken
            answer.refreshToken = session.refreshToken
            answer.expiresIn = session.expiresIn
        }
        return answer
    }

    // MARK: admin create and batchGet

    /// `POST /v1/projects/{p}/accounts` (firebase-admin `create_user`).
    func create(project: ProjectSettings, body: WireBody) async throws -> [String: String] {
        let now = clock.now
        var user = UserAccount(
            localID: body.string("localId") ?? SecureRandom.alphanumeric(28), projectID: project.id, createdAt: now, lastLoginAt: now)
        guard user.localID.count <= 128 else { throw HeraldError(.invalidArgument, "localId is longer than 128 characters.") }
        if body.contains("email") {
            guard let email = EmailAddress(body.string("email")) else { throw HeraldError(.invalidEmail) }
            user.email = email.value
        }
        if let phone = body.string("phoneNumber") { user.phoneNumber = try PhoneSignIn.parsePhone(phone).e164 }
        if let password = body.string("password") {
            if let refusal = project.passwordPolicy.check(password) { throw refusal.error }
            user.passwordHash = try await PasswordHash.make(password)
        }
        user.displayName = body.string("displayName")
        user.emailVerified = body.bool("emailVerified") ?? false
        user.disabled = body.bool("disabled") ?? false
        do {
            try await store.insertUser(user)
        } catch let conflict as AccountConflict {
            throw Self.error(for: conflict)
        }
        logger.info("account created by an admin", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        var answer = ["kind": "identitytoolkit#SignupNewUserResponse", "localId": user.localID]
        if let email = user.email { answer["email"] = email }
        return answer
    }

    struct Batch: Encodable {
        var kind = "identitytoolkit#DownloadAccountResponse"
        var users: [UserInfo]?
        var nextPageToken: String?
    }

    /// `GET /v1/projects/{p}/accounts:batchGet?maxResults=&nextPageToken=` (firebase-admin `list_users`).
    func batchGet(project: ProjectSettings, maxResults: Int?, pageToken: String?) async throws -> Batch {
        let limit = min(max(maxResults ?? 20, 1), 1000)
        let users = try await store.users(projectID: project.id, after: pageToken, limit: limit)
        return Batch(users: users.isEmpty ? nil : users.map(UserInfo.init), nextPageToken: users.count == limit ? users.last?.localID : nil)
    }

    static func error(for conflict: AccountConflict) -> HeraldError {
        switch conflict {
        case .emailExists: HeraldError(.emailExists)
        case .phoneNumberExists: HeraldError(.phoneNumberExists)
        case .localIDExists: HeraldError(.duplicateLocalID)
        case .federatedIDExists: HeraldError(.federatedUserIDAlreadyLinked)
        case .providerAlreadyLinked: HeraldError(.providerAlreadyLinked)
        }
    }
}
