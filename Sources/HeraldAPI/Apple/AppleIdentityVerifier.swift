import Foundation
import HeraldCore
import HeraldCurl
import HeraldRuntime
import JWTKit
import Logging

/// Verifies Apple identity tokens: RS256 with a key from the project's Apple key set (selected by
/// `kid`), then `AppleIdentityCheck` (issuer, audience, lifetime, nonce). jwt-kit checks only the
/// signature here; every claim check is ours, with the API's clock.
struct AppleIdentityVerifier: Sendable {
    /// One cached key set per (jwksUrl, caFile), shared by projects that use the same.
    let keySets: [String: AppleKeySet]
    let clock: any WallClock

    init(configuration: HeraldConfiguration, client: CurlClient, clock: any WallClock, logger: Logger) {
        var sets: [String: AppleKeySet] = [:]
        for project in configuration.projects where project.apple.enabled {
            let key = Self.key(project.apple)
            if sets[key] == nil {
                sets[key] = AppleKeySet(url: project.apple.jwksUrl, caFile: project.apple.caFile, client: client, clock: clock, logger: logger)
            }
        }
        self.keySets = sets
        self.clock = clock
    }

    static func key(_ apple: ProjectSettings.Apple) -> String { apple.jwksUrl + "\n" + (apple.caFile ?? "") }

    /// A token that passed every check, with its claims as JSON text (Identity Toolkit's `rawUserInfo`).
    struct Verified: Sendable {
        var claims: AppleIdentityClaims
        var rawClaims: String
    }

    func verify(_ idToken: String, rawNonce: String?, project: ProjectSettings) async throws(HeraldError) -> Verified {
        let parts = idToken.split(separator: ".", omittingEmptySubsequences: false)
        guard CompactJWS.isCanonical(idToken), parts.count == 3, let headerData = Self.base64URLDecoded(parts[0]),
            let payloadData = Self.base64URLDecoded(parts[1]),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any]
        else { throw HeraldError(.invalidIdPResponse, "Unable to parse id_token.") }
        guard header["alg"] as? String == "RS256", let kid = header["kid"] as? String, kid.isEmpty == false else {
            throw HeraldError(.invalidIdPResponse, "The id_token must be signed with RS256 and name its key (kid).")
        }
        guard let keySet = keySets[Self.key(project.apple)] else { throw HeraldError(.operationNotAllowed) }
        let keys = try await keySet.collection(for: kid)
        let payload: ApplePayload
        do {
            payload = try await keys.verify(idToken, as: ApplePayload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw HeraldError(.invalidIdPResponse, "The id_token signature does not verify.")
        } catch {
            throw HeraldError(.invalidIdPResponse, "Unable to parse id_token.")
        }
        let claims = payload.claims
        if let refusal = AppleIdentityCheck.refusal(claims, clientIDs: project.apple.clientIds, rawNonce: rawNonce, now: clock.now) {
            throw refusal
        }
        return Verified(claims: claims, rawClaims: String(decoding: payloadData, as: UTF8.self))
    }

    static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// The claims of an Apple identity token as Apple writes them: `aud` a string or a list, booleans as
/// JSON booleans or as the strings "true"/"false".
struct ApplePayload: JWTPayload {
    var iss: String
    var aud: AudienceClaim
    var sub: String
    var iat: Double
    var exp: Double
    var nonce: String?
    var nonce_supported: FlexibleBool?
    var email: String?
    var email_verified: FlexibleBool?
    var is_private_email: FlexibleBool?

    /// Only the signature is jwt-kit's to check; the claims are checked by `AppleIdentityCheck`.
    func verify(using algorithm: some JWTAlgorithm) throws {}

    var claims: AppleIdentityClaims {
        AppleIdentityClaims(
            issuer: iss, audiences: aud.value, subject: sub, issuedAt: Date(timeIntervalSince1970: iat),
            expiresAt: Date(timeIntervalSince1970: exp), nonce: nonce, nonceSupported: nonce_supported?.value, email: email,
            emailVerified: email_verified?.value, isPrivateEmail: is_private_email?.value)
    }
}

/// A boolean Apple may send as `true` or as `"true"`.
struct FlexibleBool: Codable, Sendable {
    var value: Bool

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            value = flag
        } else {
            value = try container.decode(String.self).lowercased() == "true"
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
