import Foundation
import HeraldCore
import JWTKit

/// The `client_secret` Sign in with Apple's REST API wants: an ES256 JWT with `kid` (the key id) in
/// its header and `iss` (team id), `iat`, `exp`, `aud` (`https://appleid.apple.com`) and `sub` (the
/// client id) as claims, signed with the .p8 key. Apple accepts secrets up to six months old; one per
/// client id is minted for `lifetime` and replaced once less than `renewBefore` of it is left.
public actor AppleClientSecret {
    /// How long a minted secret is valid (Apple's ceiling is 15,777,000 s, about six months).
    public static let lifetime: TimeInterval = 30 * 86_400
    /// Secrets with less than this left are replaced before use.
    public static let renewBefore: TimeInterval = 86_400
    static let audience = "https://appleid.apple.com"

    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var aud: AudienceClaim
        var sub: SubjectClaim

        /// Apple verifies; Herald only signs.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    public let teamID: String
    public let keyID: String
    let key: ES256PrivateKey
    private var signer: JWTKeyCollection?
    private var minted: [String: (secret: String, expiresAt: Date)] = [:]

    /// `keyPEM` is the content of the AuthKey_<keyID>.p8 file (PKCS#8 PEM); throws when it is not a P-256 key.
    public init(keyPEM: String, keyID: String, teamID: String) throws {
        self.key = try ES256PrivateKey(pem: keyPEM)
        self.teamID = teamID
        self.keyID = keyID
    }

    /// The secret for `clientID` at `now`, minted when there is none or it is about to expire.
    public func secret(clientID: String, now: Date) async throws -> String {
        if let current = minted[clientID], current.expiresAt.timeIntervalSince(now) > Self.renewBefore { return current.secret }
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let expiresAt = issuedAt.addingTimeInterval(Self.lifetime)
        let keys: JWTKeyCollection
        if let signer {
            keys = signer
        } else {
            keys = await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: keyID))
            signer = keys
        }
        let secret = try await keys.sign(
            Claims(
                iss: IssuerClaim(value: teamID), iat: IssuedAtClaim(value: issuedAt), exp: ExpirationClaim(value: expiresAt),
                aud: AudienceClaim(value: Self.audience), sub: SubjectClaim(value: clientID)),
            kid: JWKIdentifier(string: keyID))
        minted[clientID] = (secret, expiresAt)
        return secret
    }
}
