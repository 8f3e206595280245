import Crypto
import Foundation
import HeraldCore

/// The provider authentication token APNs wants in `authorization: bearer …`: an ES256 JWT with
/// `kid`, `iss` (team) and a numeric `iat`, signed with the .p8 key (raw r‖s, not DER).
///
/// Apple refuses tokens older than an hour and answers `TooManyProviderTokenUpdates` to a provider that
/// mints more often than every 20 minutes, so one token per key is reused for 50 minutes and only
/// replaced early when APNs calls it expired *and* it is at least 20 minutes old.
public actor APNsProviderToken {
    /// A token is renewed once this old.
    public static let lifetime: Duration = .seconds(50 * 60)
    /// Never mint more often than this.
    public static let minimumAge: Duration = .seconds(20 * 60)

    let key: P256.Signing.PrivateKey
    public let keyID: String
    public let teamID: String
    private var current: (token: String, issuedAt: Date)?

    /// `keyPEM` is the content of the AuthKey_<keyID>.p8 file (PKCS#8 PEM).
    public init(keyPEM: String, keyID: String, teamID: String) throws {
        self.key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The token to send now (minted when there is none or it reached its lifetime).
    public func token(now: Date) throws -> String {
        if let current, now.timeIntervalSince(current.issuedAt) < Self.lifetime.seconds { return current.token }
        return try mint(now: now)
    }

    /// Replaces the token after APNs refused it, unless it is younger than 20 minutes (then the key,
    /// team or clock is wrong and minting again would only get the connection throttled). True when
    /// a new token was minted.
    public func renewAfterRefusal(now: Date) throws -> Bool {
        if let current, now.timeIntervalSince(current.issuedAt) < Self.minimumAge.seconds { return false }
        _ = try mint(now: now)
        return true
    }

    /// When the current token was minted.
    public var issuedAt: Date? { current?.issuedAt }

    private func mint(now: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(Int(now.timeIntervalSince1970))}"#
        let signingInput = Data(header.utf8).base64URLEncodedString() + "." + Data(claims.utf8).base64URLEncodedString()
        let signature = try key.signature(for: Data(signingInput.utf8))
        let token = signingInput + "." + signature.rawRepresentation.base64URLEncodedString()
        current = (token, now)
        return token
    }
}
