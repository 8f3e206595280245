import Foundation
import HeraldCore

/// `POST /securetoken.googleapis.com/v1/token`: exchanges a refresh token for a fresh ID token.
struct TokenRefresh: Sendable {
    let store: any AccountStore
    let tokens: TokenIssuer
    let clock: any WallClock

    /// Snake_case, as securetoken answers; the iOS SDK rejects an empty `access_token`.
    struct Refreshed: Encodable {
        var id_token: String
        var access_token: String
        var expires_in: String
        var refresh_token: String
        var token_type = "Bearer"
        var user_id: String
        var project_id: String
    }

    func refresh(project: ProjectSettings, body: WireBody) async throws -> Refreshed {
        guard let grantType = body.string("grantType") else { throw HeraldError(.missingGrantType) }
        guard grantType == "refresh_token" else { throw HeraldError(.invalidGrantType) }
        guard let token = body.string("refreshToken") else { throw HeraldError(.missingRefreshToken) }
        guard let record = try await store.refreshToken(hash: SHA256Hex.digest(token)), record.projectID == project.id,
            let user = try await store.user(projectID: project.id, localID: record.localID)
        else { throw HeraldError(.invalidRefreshToken) }
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        if let validSince = user.validSince, record.createdAt < validSince { throw HeraldError(.tokenExpired) }
        let provider = RefreshProvider(stored: record.provider)
        let secondFactor = provider.secondFactor.flatMap { id in user.mfaEnrollments.first { $0.enrollmentID == id } }
        let idToken = try await tokens.idToken(
            for: user, provider: provider.provider, authTime: record.createdAt, now: clock.now, secondFactor: secondFactor)
        return Refreshed(
            id_token: idToken, access_token: idToken, expires_in: String(Int(tokens.idTokenTTL.seconds)), refresh_token: token,
            user_id: user.localID, project_id: project.id)
    }
}
