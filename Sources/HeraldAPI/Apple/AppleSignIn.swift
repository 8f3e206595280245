import Foundation
import HeraldCore
import Logging
import Metrics

/// `accounts:signInWithIdp` (legacy `verifyAssertion`) for Sign in with Apple, as production Firebase
/// answers it: the identity token is verified (`AppleIdentityVerifier`), accepted once, and signs in
/// the user linked to its `sub`, links it to the signed-in caller (`idToken`), links it to the account
/// that holds the same verified email, or creates a user. An account holding the address unverified
/// is never taken over: the answer is `needConfirmation` with a `pendingToken`, which the app replays
/// after signing in to that account another way.
struct AppleSignIn: Sendable {
    let store: any AccountStore & CredentialReplayStore
    let verifier: AppleIdentityVerifier
    let signedIn: SignedInUser
    let completion: SignInCompletion
    let keys: HeraldKeys
    let clock: any WallClock
    let logger: Logger

    static let providerID = "apple.com"
    /// How long a `pendingToken` can be replayed.
    static let pendingTTL: TimeInterval = 3600

    /// `VerifyAssertionResponse`.
    struct Answer: Encodable, FirstFactorAnswer {
        var kind = "identitytoolkit#VerifyAssertionResponse"
        var providerId = AppleSignIn.providerID
        var federatedId: String
        var localId: String?
        var email: String?
        var emailVerified: Bool?
        var displayName: String?
        var rawUserInfo: String?
        var oauthIdToken: String?
        var isNewUser: Bool?
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String?
        var needConfirmation: Bool?
        var pendingToken: String?
        var errorMessage: String?
        var mfaPendingCredential: String?
        var mfaInfo: [SignInCompletion.MFAInfo]?
    }

    /// What a verified Apple credential proves; sealed as the `pendingToken` for a later replay.
    struct Credential: Codable, Sendable {
        var projectId: String
        var sub: String
        var email: String?
        var emailVerified: Bool
        var isPrivateEmail: Bool
        var displayName: String?
        var rawUserInfo: String
        var expiresAt: Double
        /// The Apple token itself, echoed as `oauthIdToken`; never sealed into a pending token.
        var idToken: String?

        func identity(linkedAt: Date) -> FederatedIdentity {
            FederatedIdentity(
                providerID: AppleSignIn.providerID, federatedID: sub, email: email, emailVerified: emailVerified, isPrivateEmail: isPrivateEmail,
                displayName: displayName, linkedAt: linkedAt)
        }
    }

    /// A refusal Identity Toolkit answers with 200 and `errorMessage` when the client asked for the
    /// credential back (`returnIdpCredential`), so iOS can offer it to the account that has it.
    struct Conflict: Error {
        var error: HeraldError
    }

    func signIn(project: ProjectSettings, body: WireBody) async throws -> Answer {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard let requestURI = body.string("requestUri") else { throw HeraldError(.missingRequestURI) }
        guard let components = URLComponents(string: requestURI), components.scheme != nil else { throw HeraldError(.invalidRequestURI) }
        let returnCredential = body.bool("returnIdpCredential") == true

        let credential: Credential
        if let pending = body.string("pendingToken") {
            guard project.apple.enabled else { throw HeraldError(.operationNotAllowed) }
            credential = try openPending(pending, projectID: project.id)
        } else {
            // The SDKs put the IdP's answer in postBody; the emulator also reads requestUri's query and fragment.
            var form = FormEncoding.decode(components.percentEncodedQuery ?? "")
            form.merge(FormEncoding.decode(components.percentEncodedFragment ?? "")) { $1 }
            form.merge(FormEncoding.decode(body.string("postBody") ?? "")) { $1 }
            guard let providerID = form["providerId"], providerID.isEmpty == false else {
                throw HeraldError(.invalidCredentialOrProviderID, "Invalid IdP response/credential: no providerId in postBody.")
            }
            guard providerID == Self.providerID else {
                throw HeraldError(.operationNotAllowed, "The identity provider configuration is not found.")
            }
            guard project.apple.enabled else { throw HeraldError(.operationNotAllowed) }
            guard let idToken = form["id_token"], idToken.isEmpty == false else {
                throw HeraldError(.invalidIdPResponse, "Sign in with Apple needs the id_token in postBody.")
            }
            let verified = try await verifier.verify(idToken, rawNonce: form["nonce"], project: project)
            let claims = verified.claims
            let expiry = claims.expiresAt.addingTimeInterval(AppleIdentityCheck.leeway)
            guard try await store.spendCredential(hash: AppleIdentityCheck.replayKey(of: claims), projectID: project.id, expiresAt: expiry) else {
                logger.notice("Apple identity token replayed", metadata: ["project": .string(project.id)])
                throw AppleIdentityCheck.duplicate
            }
            credential = Credential(
                projectId: project.id, sub: claims.subject, email: claims.email.flatMap { EmailAddress($0)?.value },
                emailVerified: claims.emailVerified ?? false, isPrivateEmail: claims.isPrivateEmail ?? false,
                displayName: Self.displayName(fromUserJSON: form["user"]), rawUserInfo: verified.rawClaims,
                expiresAt: clock.now.addingTimeInterval(Self.pendingTTL).timeIntervalSince1970, idToken: idToken)
        }

        var answer = Answer(
            federatedId: credential.sub, email: credential.email, emailVerified: credential.email == nil ? nil : credential.emailVerified,
            displayName: credential.displayName, rawUserInfo: credential.rawUserInfo, oauthIdToken: returnCredential ? credential.idToken : nil)
        let linking = try await body.string("idToken").asyncMap { try await signedIn.resolve($0, project: project).user }
        let resolution: Resolution
        do {
            resolution = try await account(for: credential, linkingTo: linking, project: project)
        } catch let conflict as Conflict {
            logger.info(
                "Apple credential conflicts with another account",
                metadata: ["project": .string(project.id), "error": .string(conflict.error.code.name)])
            guard returnCredential else { throw conflict.error }
            answer.errorMessage = conflict.error.code.name
            answer.pendingToken = pendingToken(for: credential)
            return answer
        }
        let user: UserAccount
        switch resolution {
        case .needsConfirmation:
            answer.needConfirmation = true
            answer.pendingToken = pendingToken(for: credential)
            logger.info("Apple sign-in needs confirmation: an account holds the address unverified", metadata: ["project": .string(project.id)])
            return answer
        case .signedIn(let found, let created):
            user = found
            answer.isNewUser = created
        }
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        answer.localId = user.localID
        answer.displayName = answer.displayName ?? user.displayName
        Counter(label: "herald_api_idp_sign_ins_total", dimensions: [("project", project.id), ("provider", Self.providerID)]).increment()
        logger.info(
            "Apple sign-in",
            metadata: [
                "project": .string(project.id), "user": .string(user.localID), "new": .stringConvertible(answer.isNewUser ?? false),
                "linked": .stringConvertible(linking != nil),
            ])
        answer.take(try await completion.complete(user, provider: Self.providerID))
        return answer
    }

    enum Resolution {
        case signedIn(UserAccount, created: Bool)
        case needsConfirmation
    }

    /// The account the credential signs in to (see the type's comment for the rules).
    private func account(
        for credential: Credential, linkingTo linking: UserAccount?, project: ProjectSettings, attempt: Int = 0
    ) async throws -> Resolution {
        let now = clock.now
        let identity = credential.identity(linkedAt: now)
        if var owner = try await store.user(projectID: project.id, providerID: Self.providerID, federatedID: credential.sub) {
            if let linking, linking.localID != owner.localID { throw Conflict(error: HeraldError(.federatedUserIDAlreadyLinked)) }
            try await store.linkIdentity(identity, projectID: project.id, localID: owner.localID)
            owner.lastLoginAt = now
            if owner.displayName == nil { owner.displayName = credential.displayName }
            try await store.updateUser(owner)
            return .signedIn(owner, created: false)
        }
        if var user = linking {
            if user.email == nil, let email = credential.email {
                if try await store.user(projectID: project.id, email: email) != nil { throw Conflict(error: HeraldError(.emailExists)) }
                user.email = email
                user.emailVerified = credential.emailVerified
            }
            if user.displayName == nil { user.displayName = credential.displayName }
            user.lastLoginAt = now
            do {
                try await store.linkIdentity(identity, projectID: project.id, localID: user.localID)
                try await store.updateUser(user)
            } catch AccountConflict.federatedIDExists {
                throw Conflict(error: HeraldError(.federatedUserIDAlreadyLinked))
            } catch AccountConflict.emailExists {
                throw Conflict(error: HeraldError(.emailExists))
            } catch AccountConflict.providerAlreadyLinked {
                throw HeraldError(.providerAlreadyLinked)
            }
            return .signedIn(try await store.user(projectID: project.id, localID: user.localID) ?? user, created: false)
        }
        if let email = credential.email, var holder = try await store.user(projectID: project.id, email: email) {
            // Apple proved the address and the account had proven it too: the same person. Anything less
            // could be someone who registered the address to wait for its owner (pre-hijacking).
            guard credential.emailVerified, holder.emailVerified else { return .needsConfirmation }
            do {
                try await store.linkIdentity(identity, projectID: project.id, localID: holder.localID)
            } catch AccountConflict.providerAlreadyLinked {
                // The address's account has another Apple account linked: the user must choose.
                return .needsConfirmation
            } catch AccountConflict.federatedIDExists {
                return try await retry(credential, project: project, attempt: attempt)
            }
            holder.lastLoginAt = now
            if holder.displayName == nil { holder.displayName = credential.displayName }
            try await store.updateUser(holder)
            logger.info("Apple identity linked to the account with the same verified email", metadata: ["project": .string(project.id)])
            return .signedIn(try await store.user(projectID: project.id, localID: holder.localID) ?? holder, created: false)
        }
        let user = UserAccount(
            localID: SecureRandom.alphanumeric(28), projectID: project.id, email: credential.email, emailVerified: credential.emailVerified,
            displayName: credential.displayName, createdAt: now, lastLoginAt: now, identities: [identity])
        do {
            try await store.insertUser(user)
            return .signedIn(user, created: true)
        } catch AccountConflict.federatedIDExists, AccountConflict.emailExists {
            // Another request created the account a moment ago: resolve again.
            return try await retry(credential, project: project, attempt: attempt)
        }
    }

    private func retry(_ credential: Credential, project: ProjectSettings, attempt: Int) async throws -> Resolution {
        guard attempt < 2 else { throw HeraldError(.unavailable, "The account is changing. Try again.", retryAfter: .seconds(1)) }
        return try await account(for: credential, linkingTo: nil, project: project, attempt: attempt + 1)
    }

    /// The credential sealed for a later `signInWithIdp` with `pendingToken` (the Apple token is
    /// single-use, so the proof it gave is what gets replayed).
    func pendingToken(for credential: Credential) -> String {
        var sealed = credential
        sealed.idToken = nil
        sealed.expiresAt = clock.now.addingTimeInterval(Self.pendingTTL).timeIntervalSince1970
        // Plain strings, bools and a number: encoding cannot fail.
        let json = String(decoding: try! JSONEncoder().encode(sealed), as: UTF8.self)
        return Sealer(key: keys.sealing).seal(json, context: "idp-pending")
    }

    func openPending(_ token: String, projectID: String) throws(HeraldError) -> Credential {
        guard let json = try? Sealer(key: keys.sealing).open(token, context: "idp-pending"),
            let credential = try? JSONDecoder().decode(Credential.self, from: Data(json.utf8)), credential.projectId == projectID,
            Date(timeIntervalSince1970: credential.expiresAt) > clock.now
        else { throw HeraldError(.invalidPendingToken) }
        return credential
    }

    /// "First Last" from the `user` JSON Apple hands the app on the first sign-in only.
    static func displayName(fromUserJSON text: String?) -> String? {
        guard let text, let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let name = object["name"] as? [String: Any]
        else { return nil }
        let parts = ["firstName", "middleName", "lastName"].compactMap { name[$0] as? String }.filter { $0.isEmpty == false }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }
}

extension Optional {
    /// `map` with an async throwing transform.
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
