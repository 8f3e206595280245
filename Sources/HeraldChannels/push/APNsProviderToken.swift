import Foundation
import HeraldCore
import JWTKit

/// The provider authentication token APNs wants in `authorization: bearer …`: an ES256 JWT with
/// `kid` in its header, `iss` (team) and a numeric `iat`, signed by jwt-kit with the .p8 key.
///
/// Apple refuses tokens older than an hour and answers `TooManyProviderTokenUpdates` to a provider that
/// mints more often than every 20 minutes, so one token per key is reused for 50 minutes and only
/// replaced early when APNs calls it expired *and* it is at least 20 minutes old.
public actor APNsProviderToken {
    /// A token is renewed once this old.
    public static let lifetime: Duration = .seconds(50 * 60)
    /// Never mint more often than this.
    public static let minimumAge: Duration = .seconds(20 * 60)

    /// The claims APNs reads.
    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim

        /// Apple verifies; the provider only signs.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    let key: ES256PrivateKey
    public let keyID: String
    public let teamID: String
    private var signer: JWTKeyCollection?
    private var current: (token: String, issuedAt: Date)?
    /// The mint in progress: signing suspends the actor, and callers arriving meanwhile must share its
    /// token instead of minting their own (APNs throttles connections that switch tokens often).
    private var minting: Task<String, any Error>?

    /// `keyPEM` is the content of the AuthKey_<keyID>.p8 file (PKCS#8 PEM).
    public init(keyPEM: String, keyID: String, teamID: String) throws {
        self.key = try ES256PrivateKey(pem: keyPEM)
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The token to send now (minted when there is none or it reached its lifetime).
    public func token(now: Date) async throws -> String {
        if let current, now.timeIntervalSince(current.issuedAt) < Self.lifetime.seconds { return current.token }
        return try await mintOnce(now: now)
    }

    /// Replaces the token after APNs refused it, unless it is younger than 20 minutes (then the key,
    /// team or clock is wrong and minting again would only get the connection throttled). True when
    /// a new token was minted.
    public func renewAfterRefusal(now: Date) async throws -> Bool {
        if let current, now.timeIntervalSince(current.issuedAt) < Self.minimumAge.seconds { return false }
        _ = try await mintOnce(now: now)
        return true
    }

    private func mintOnce(now: Date) async throws -> String {
        if let minting { return try await minting.value }
        let task = Task { try await self.mint(now: now) }
        minting = task
        defer { minting = nil }
        return try await task.value
    }

    /// When the current token was minted.
    public var issuedAt: Date? { current?.issuedAt }

    private func mint(now: Date) async throws -> String {
        let keys: JWTKeyCollection
        if let signer {
            keys = signer
        } else {
            keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: keyID))
            signer = keys
        }
        // Whole seconds: APNs wants an integer `iat`.
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let token = try await keys.sign(
            Claims(iss: IssuerClaim(value: teamID), iat: IssuedAtClaim(value: issuedAt)), kid: JWKIdentifier(string: keyID))
        current = (token, now)
        return token
    }
}
