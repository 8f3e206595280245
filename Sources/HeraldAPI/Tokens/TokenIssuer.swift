import Crypto
import CryptoExtras
import Foundation
import HeraldCore
import HeraldRuntime
import JWTKit

/// Issues Firebase-shaped ID tokens (RS256) and opaque refresh tokens, and publishes the public key.
///
/// Tokens carry the claims Firebase Admin SDKs and backends check (iss, aud, sub, user_id, auth_time,
/// phone_number, firebase.identities/sign_in_provider), so a backend verifying Herald's tokens against
/// `/.well-known/jwks.json` works like one verifying Firebase's.
public struct TokenIssuer: Sendable {
    let keys: JWTKeyCollection
    let keyID: String
    let jwks: String
    public let idTokenTTL: Duration

    /// Uses the RSA private key in `privateKeyPEM` (at least 2048 bits).
    public init(privateKeyPEM: String, idTokenTTL: Duration) async throws {
        let privateKey: JWTKit.Insecure.RSA.PrivateKey
        do {
            privateKey = try JWTKit.Insecure.RSA.PrivateKey(pem: privateKeyPEM)
        } catch {
            throw ConfigError(key: "tokens.signingKeyFile", problem: "not an RSA private key of at least 2048 bits in PEM")
        }
        let publicKey = privateKey.publicKey
        let digest = SHA256.hash(data: publicKey.derRepresentation)
        self.keyID = SHA256Hex.hex(Data(digest).prefix(20))
        let (modulus, exponent) = try publicKey.getKeyPrimitives()
        let jwk: [String: String] = [
            "kty": "RSA", "alg": "RS256", "use": "sig", "kid": keyID,
            "n": modulus.base64URLEncodedString(), "e": exponent.base64URLEncodedString(),
        ]
        let document = try JSONSerialization.data(withJSONObject: ["keys": [jwk]], options: [.sortedKeys])
        self.jwks = String(decoding: document, as: UTF8.self)
        self.keys = JWTKeyCollection()
        await keys.add(rsa: privateKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: keyID))
        self.idTokenTTL = idTokenTTL
    }

    /// A new 2048-bit RSA private key in PEM, for installations that let Herald generate one.
    public static func generatePrivateKeyPEM() throws -> String {
        try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation + "\n"
    }

    /// The JSON Web Key Set with the public key (`GET /.well-known/jwks.json`).
    public var jwksDocument: String { jwks }

    /// A signed ID token for `user`, who signed in with `provider` at `authTime` (and, when set, passed
    /// the second factor `secondFactor`).
    public func idToken(for user: UserAccount, provider: String, authTime: Date, now: Date, secondFactor: MFAEnrollment? = nil) async throws -> String
    {
        var identities: [String: [String]] = [:]
        if let phone = user.phoneNumber { identities["phone"] = [phone] }
        if let email = user.email { identities["email"] = [email] }
        for identity in user.identities { identities[identity.providerID] = [identity.federatedID] }
        let payload = IDTokenClaims(
            iss: IssuerClaim(value: "https://securetoken.google.com/\(user.projectID)"),
            aud: AudienceClaim(value: user.projectID),
            sub: SubjectClaim(value: user.localID),
            iat: IssuedAtClaim(value: Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))),
            exp: ExpirationClaim(value: Date(timeIntervalSince1970: now.adding(idTokenTTL).timeIntervalSince1970.rounded(.down))),
            user_id: user.localID,
            auth_time: Int(authTime.timeIntervalSince1970),
            phone_number: user.phoneNumber,
            email: user.email,
            email_verified: user.email == nil ? nil : user.emailVerified,
            name: user.displayName,
            firebase: .init(
                identities: identities, sign_in_provider: provider, sign_in_second_factor: secondFactor == nil ? nil : "phone",
                second_factor_identifier: secondFactor?.enrollmentID))
        let custom = user.customAttributes.flatMap { try? JSONDecoder().decode([String: ClaimValue].self, from: Data($0.utf8)) } ?? [:]
        return try await keys.sign(IDTokenPayload(claims: payload, custom: custom), kid: JWKIdentifier(string: keyID))
    }

    /// What a verified ID token says.
    public struct Verified: Sendable {
        public var projectID: String
        public var localID: String
        public var issuedAt: Date
        /// When the user last signed in with a credential (refreshes keep it).
        public var authTime: Date
        public var provider: String
        public var secondFactor: String?
    }

    /// Checks an ID token this issuer signed: signature, expiry, audience. Malformed, foreign or for
    /// another project → INVALID_ID_TOKEN; expired → TOKEN_EXPIRED.
    public func verify(_ idToken: String, projectID: String, now: Date) async throws(HeraldError) -> Verified {
        // One spelling per token: jwt-kit also accepts padding and stray low bits.
        guard CompactJWS.isCanonical(idToken) else { throw HeraldError(.invalidIDToken) }
        let claims: IDTokenClaims
        do {
            claims = try await keys.verify(idToken, as: IDTokenClaims.self)
        } catch {
            if let jwt = error as? JWTError, jwt.errorType == .claimVerificationFailure { throw HeraldError(.tokenExpired) }
            throw HeraldError(.invalidIDToken)
        }
        guard claims.aud.value.contains(projectID) else { throw HeraldError(.invalidIDToken) }
        guard claims.exp.value > now else { throw HeraldError(.tokenExpired) }
        return Verified(
            projectID: projectID, localID: claims.sub.value, issuedAt: claims.iat.value,
            authTime: Date(timeIntervalSince1970: Double(claims.auth_time)), provider: claims.firebase.sign_in_provider,
            secondFactor: claims.firebase.second_factor_identifier)
    }

    /// A new opaque refresh token and the record to store (only its hash is kept).
    public func refreshToken(for user: UserAccount, provider: String, now: Date) -> (token: String, record: RefreshTokenRecord) {
        let token = "hrt_" + SecureRandom.base64URL(bytes: 32)
        let record = RefreshTokenRecord(
            tokenHash: SHA256Hex.digest(token), projectID: user.projectID, localID: user.localID, provider: provider, createdAt: now)
        return (token, record)
    }
}

/// The claims of a Firebase ID token.
struct IDTokenClaims: JWTPayload {
    struct Firebase: Codable, Sendable {
        var identities: [String: [String]]
        var sign_in_provider: String
        var sign_in_second_factor: String?
        var second_factor_identifier: String?
    }

    var iss: IssuerClaim
    var aud: AudienceClaim
    var sub: SubjectClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var user_id: String
    var auth_time: Int
    var phone_number: String?
    var email: String?
    var email_verified: Bool?
    var name: String?
    var firebase: Firebase

    func verify(using algorithm: some JWTAlgorithm) throws {
        try exp.verifyNotExpired()
    }
}

/// An ID token as signed: the standard claims, then the user's custom claims (a custom claim named like
/// a standard one is left out: the standard claim wins).
struct IDTokenPayload: JWTPayload {
    var claims: IDTokenClaims
    var custom: [String: ClaimValue]

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    static let standard: Set<String> = [
        "iss", "aud", "sub", "iat", "exp", "user_id", "auth_time", "phone_number", "email", "email_verified", "name", "firebase",
    ]

    func encode(to encoder: any Encoder) throws {
        try claims.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in custom where Self.standard.contains(name) == false {
            try container.encode(value, forKey: Key(stringValue: name))
        }
    }

    init(claims: IDTokenClaims, custom: [String: ClaimValue]) {
        self.claims = claims
        self.custom = custom
    }

    init(from decoder: any Decoder) throws {
        claims = try IDTokenClaims(from: decoder)
        custom = [:]
    }

    func verify(using algorithm: some JWTAlgorithm) throws { try claims.verify(using: algorithm) }
}

/// A JSON value of a custom claim (decoded strictly: `true` stays a boolean, `1` an integer).
enum ClaimValue: Codable, Sendable {
    case string(String)
    case number(Double)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([ClaimValue])
    case object([String: ClaimValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int64.self) {
            self = .integer(number)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let list = try? container.decode([ClaimValue].self) {
            self = .array(list)
        } else {
            self = .object(try container.decode([String: ClaimValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .number(let number): try container.encode(number)
        case .integer(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        case .null: try container.encodeNil()
        case .array(let list): try container.encode(list)
        case .object(let object): try container.encode(object)
        }
    }
}
