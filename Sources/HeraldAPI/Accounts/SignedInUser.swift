import Foundation
import HeraldCore

/// Turns an `idToken` into its user with Identity Toolkit's checks, in its order: missing →
/// MISSING_ID_TOKEN; bad signature, another project → INVALID_ID_TOKEN; no such user →
/// USER_NOT_FOUND; issued before `validSince` or expired → TOKEN_EXPIRED; disabled → USER_DISABLED.
struct SignedInUser: Sendable {
    let store: any AccountStore
    let tokens: TokenIssuer
    let clock: any WallClock
    /// `tokens.recentLogin`.
    let recentLogin: Duration

    func resolve(_ idToken: String?, project: ProjectSettings) async throws -> (user: UserAccount, token: TokenIssuer.Verified) {
        guard let idToken else { throw HeraldError(.missingIDToken) }
        let verified = try await tokens.verify(idToken, projectID: project.id, now: clock.now)
        guard let user = try await store.user(projectID: project.id, localID: verified.localID) else { throw HeraldError(.userNotFound) }
        if let validSince = user.validSince, verified.issuedAt.timeIntervalSince1970 < validSince.timeIntervalSince1970.rounded(.down) {
            throw HeraldError(.tokenExpired)
        }
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        return (user, verified)
    }

    /// `resolve`, for sensitive changes: the sign-in behind the token must be recent
    /// (`tokens.recentLogin`), else CREDENTIAL_TOO_OLD_LOGIN_AGAIN and the app re-authenticates.
    func resolveRecent(_ idToken: String?, project: ProjectSettings) async throws -> (user: UserAccount, token: TokenIssuer.Verified) {
        let resolved = try await resolve(idToken, project: project)
        try requireRecent(resolved.token)
        return resolved
    }

    func requireRecent(_ token: TokenIssuer.Verified) throws(HeraldError) {
        guard clock.now.timeIntervalSince(token.authTime) <= recentLogin.seconds else { throw HeraldError(.credentialTooOld) }
    }
}

/// Admin callers: `Authorization: Bearer <token>` with a token from `admin.tokens` (compared in
/// constant time). firebase-admin in emulator-host mode sends `Bearer owner`.
struct AdminAuthorization: Sendable {
    let tokens: [String]

    func isAdmin(authorization: String?) -> Bool {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return false }
        let presented = Array(authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces).utf8)
        var matched = false
        for token in tokens {
            let expected = Array(token.utf8)
            var difference = UInt8(expected.count == presented.count ? 0 : 1)
            for index in 0..<expected.count { difference |= expected[index] ^ (index < presented.count ? presented[index] : 0) }
            matched = matched || difference == 0
        }
        return matched
    }
}
