import Crypto
import CryptoExtras
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import NIOCore
import Synchronization

/// A fake Sign in with Apple on 127.0.0.1, over TLS with the test CA (`TestTLS`), speaking Apple's
/// REST API: `GET /auth/keys` (a JWKS of RS256 keys that can rotate or go away), `POST /auth/token`
/// (checks the ES256 client secret — kid, iss, sub, aud, lifetime, signature — and single-use codes)
/// and `POST /auth/revoke` (records revoked tokens, answers 200 with an empty body like Apple). It
/// also mints identity tokens signed with its keys, for the API's `signInWithIdp`.
public final class FakeApple: Sendable {
    public static let issuer = "https://appleid.apple.com"

    /// One `/auth/token` or `/auth/revoke` request as received.
    public struct Request: Sendable {
        public var path: String
        public var form: [String: String]
        /// Empty when the request passed every check; else why it was refused.
        public var problem: String?
        public var status: Int
    }

    struct Code {
        var clientID: String
        var redirectURI: String?
        var used = false
    }

    struct State {
        var published: [String]
        var keysAvailable = true
        var keyFetches = 0
        var codes: [String: Code] = [:]
        var tokenScript: [Int] = []
        var revokeScript: [Int] = []
        var requests: [Request] = []
        var revoked: [String] = []
        var refreshTokens: Set<String> = []
    }

    final class Box: Sendable {
        let state: Mutex<State>
        init(_ state: State) { self.state = Mutex(state) }
    }

    public let teamID: String
    public let keyID: String
    public let clientIDs: Set<String>
    /// The Sign in with Apple key (PKCS#8 PEM), what an AuthKey_<keyID>.p8 holds.
    public let clientSecretKeyPEM: String
    let clientSecretKey: P256.Signing.PublicKey
    let signingKeys: [String: _RSA.Signing.PrivateKey]
    let box: Box
    let server: BackgroundServer

    public var baseURL: String { "https://127.0.0.1:\(server.port)" }
    public var jwksURL: String { baseURL + "/auth/keys" }
    public var tokenURL: String { baseURL + "/auth/token" }
    public var revokeURL: String { baseURL + "/auth/revoke" }

    /// Starts the fake with identity-token keys `k1`, `k2` and `k3`, of which `published` are in the JWKS.
    public static func start(
        teamID: String = "TEAM123456", keyID: String = "SIWAKEY123", clientIDs: Set<String>, published: [String] = ["k1", "k2"]
    ) async throws -> FakeApple {
        let keys = TestKeys.appleIdentityKeys
        let secretKey = P256.Signing.PrivateKey()
        let box = Box(State(published: published))
        let router = Router()
        let check = SecretCheck(teamID: teamID, keyID: keyID, clientIDs: clientIDs, key: secretKey.publicKey)
        let jwks = try keys.mapValues { key -> [String: String] in
            let primitives = try key.publicKey.getKeyPrimitives()
            return ["n": primitives.modulus.base64URL, "e": primitives.publicExponent.base64URL]
        }
        router.get("/auth/keys") { _, _ -> Response in
            let (available, published) = box.state.withLock { state in
                state.keyFetches += 1
                return (state.keysAvailable, state.published)
            }
            guard available else { return Self.json(503, ["error": "unavailable"]) }
            let entries = published.compactMap { kid in
                jwks[kid].map { ["kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": $0["n"]!, "e": $0["e"]!] }
            }
            return Self.json(200, ["keys": entries])
        }
        router.post("/auth/token") { request, _ -> Response in
            let form = HeraldCore.FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 1 << 16)))
            return box.state.withLock { state in Self.token(form, check: check, state: &state, mint: { Self.randomToken() }) }
        }
        router.post("/auth/revoke") { request, _ -> Response in
            let form = HeraldCore.FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 1 << 16)))
            return box.state.withLock { state in
                if state.revokeScript.isEmpty == false {
                    let status = state.revokeScript.removeFirst()
                    state.requests.append(Request(path: "/auth/revoke", form: form, problem: "scripted", status: status))
                    return Self.json(status, ["error": "server_error"])
                }
                if let problem = check.problem(form) {
                    state.requests.append(Request(path: "/auth/revoke", form: form, problem: problem, status: 400))
                    return Self.json(400, ["error": "invalid_client"])
                }
                guard let token = form["token"], token.isEmpty == false else {
                    state.requests.append(Request(path: "/auth/revoke", form: form, problem: "no token", status: 400))
                    return Self.json(400, ["error": "invalid_request"])
                }
                state.revoked.append(token)
                state.requests.append(Request(path: "/auth/revoke", form: form, problem: nil, status: 200))
                return Response(status: .ok)
            }
        }
        let server = try await BackgroundServer.start(
            router: router,
            server: .http2Upgrade(
                tlsConfiguration: TestTLS.shared.serverConfiguration(),
                configuration: .init(idleTimeout: .seconds(30), gracefulCloseTimeout: .seconds(1))))
        return FakeApple(
            teamID: teamID, keyID: keyID, clientIDs: clientIDs, clientSecretKeyPEM: secretKey.pemRepresentation,
            clientSecretKey: secretKey.publicKey, signingKeys: keys, box: box, server: server)
    }

    init(
        teamID: String, keyID: String, clientIDs: Set<String>, clientSecretKeyPEM: String, clientSecretKey: P256.Signing.PublicKey,
        signingKeys: [String: _RSA.Signing.PrivateKey], box: Box, server: BackgroundServer
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.clientIDs = clientIDs
        self.clientSecretKeyPEM = clientSecretKeyPEM
        self.clientSecretKey = clientSecretKey
        self.signingKeys = signingKeys
        self.box = box
        self.server = server
    }

    public func stop() async { await server.stop() }

    // MARK: Script and observations

    /// Publishes exactly these keys from now on (a rotation).
    public func publish(_ kids: [String]) { box.state.withLock { $0.published = kids } }
    /// While false, `/auth/keys` answers 503.
    public func setKeysAvailable(_ available: Bool) { box.state.withLock { $0.keysAvailable = available } }
    public var keyFetches: Int { box.state.withLock { $0.keyFetches } }
    /// The next `/auth/token` requests get these statuses (before any check; codes stay unused).
    public func failTokenRequests(_ statuses: [Int]) { box.state.withLock { $0.tokenScript += statuses } }
    public func failRevokeRequests(_ statuses: [Int]) { box.state.withLock { $0.revokeScript += statuses } }
    /// Every token and revoke request, in arrival order.
    public var requests: [Request] { box.state.withLock { $0.requests } }
    /// Tokens revoked, in order.
    public var revokedTokens: [String] { box.state.withLock { $0.revoked } }
    /// Refresh tokens handed out by `/auth/token`.
    public var issuedRefreshTokens: Set<String> { box.state.withLock { $0.refreshTokens } }

    /// A new single-use authorization code for `clientID` (what the app gets with the identity token).
    public func issueCode(clientID: String, redirectURI: String? = nil) -> String {
        let code = "c" + Self.randomToken()
        box.state.withLock { $0.codes[code] = Code(clientID: clientID, redirectURI: redirectURI) }
        return code
    }

    /// An identity token as Apple signs it; every claim can be overridden (`nil` in `overrides` removes one).
    /// `kid` picks the signing key (and the header's kid, unless `headerKid` says otherwise).
    public func identityToken(
        subject: String, audience: String, rawNonce: String?, email: String? = nil, emailVerified: Any? = true, isPrivateEmail: Any? = nil,
        issuedAt: Date = Date(), lifetime: TimeInterval = 600, kid: String = "k1", headerKid: String? = nil, overrides: [String: Any?] = [:]
    ) -> String {
        var claims: [String: Any] = [
            "iss": Self.issuer, "aud": audience, "sub": subject, "iat": Int(issuedAt.timeIntervalSince1970),
            "exp": Int(issuedAt.timeIntervalSince1970 + lifetime), "auth_time": Int(issuedAt.timeIntervalSince1970), "nonce_supported": true,
            "real_user_status": 2,
        ]
        if let rawNonce { claims["nonce"] = SHA256.hash(data: Data(rawNonce.utf8)).map { String(format: "%02x", $0) }.joined() }
        if let email {
            claims["email"] = email
            if let emailVerified { claims["email_verified"] = emailVerified }
            if let isPrivateEmail { claims["is_private_email"] = isPrivateEmail }
        }
        for (key, value) in overrides { claims[key] = value }
        let header = ["alg": "RS256", "kid": headerKid ?? kid]
        func segment(_ object: Any) -> String {
            (try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).base64URL
        }
        let input = segment(header) + "." + segment(claims)
        let signature = try! signingKeys[kid]!.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + signature.rawRepresentation.base64URL
    }

    // MARK: Apple's checks

    struct SecretCheck: Sendable {
        let teamID: String
        let keyID: String
        let clientIDs: Set<String>
        let key: P256.Signing.PublicKey

        /// Why the client_id/client_secret pair would be `invalid_client` at Apple; nil when it passes.
        func problem(_ form: [String: String]) -> String? {
            guard let clientID = form["client_id"], clientIDs.contains(clientID) else { return "unknown client_id" }
            guard let secret = form["client_secret"] else { return "no client_secret" }
            let parts = secret.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, let header = Self.json(parts[0]), let claims = Self.json(parts[1]) else { return "client_secret is not a JWT" }
            guard header["alg"] as? String == "ES256" else { return "client_secret alg is not ES256" }
            guard header["kid"] as? String == keyID else { return "client_secret kid is not the key id" }
            guard let signature = Data(base64URLEncoded: parts[2]).flatMap({ try? P256.Signing.ECDSASignature(rawRepresentation: $0) }),
                key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
            else { return "client_secret signature does not verify" }
            guard claims["iss"] as? String == teamID else { return "client_secret iss is not the team id" }
            guard claims["sub"] as? String == clientID else { return "client_secret sub is not the client_id" }
            guard claims["aud"] as? String == FakeApple.issuer else { return "client_secret aud is not https://appleid.apple.com" }
            guard let iat = claims["iat"] as? Int, let exp = claims["exp"] as? Int else { return "client_secret without iat/exp" }
            let now = Int(Date().timeIntervalSince1970)
            guard exp > now, iat <= now + 60, exp - iat <= 15_777_000 else { return "client_secret expired or too long-lived" }
            return nil
        }

        static func json(_ part: String) -> [String: Any]? {
            Data(base64URLEncoded: part).flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
        }
    }

    static func token(_ form: [String: String], check: SecretCheck, state: inout State, mint: () -> String) -> Response {
        func record(_ problem: String?, _ status: Int) {
            state.requests.append(Request(path: "/auth/token", form: form, problem: problem, status: status))
        }
        if state.tokenScript.isEmpty == false {
            let status = state.tokenScript.removeFirst()
            record("scripted", status)
            return json(status, ["error": "server_error"])
        }
        if let problem = check.problem(form) {
            record(problem, 400)
            return json(400, ["error": "invalid_client"])
        }
        switch form["grant_type"] {
        case "authorization_code":
            guard let code = form["code"], var issued = state.codes[code], issued.used == false,
                issued.clientID == form["client_id"], issued.redirectURI == nil || issued.redirectURI == form["redirect_uri"]
            else {
                record("code unknown, used or for another client", 400)
                return json(400, ["error": "invalid_grant", "error_description": "The code has expired or has been revoked."])
            }
            issued.used = true
            state.codes[code] = issued
            let refresh = "r" + mint()
            state.refreshTokens.insert(refresh)
            record(nil, 200)
            return json(
                200,
                ["access_token": "a" + mint(), "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh, "id_token": "unused"])
        default:
            record("unsupported grant_type", 400)
            return json(400, ["error": "unsupported_grant_type"])
        }
    }

    static func json(_ status: Int, _ object: Any) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func randomToken() -> String {
        Data((0..<24).map { _ in UInt8.random(in: 0...255) }).base64URL
    }
}

extension Data {
    /// base64url without padding (JWT segments, JWK numbers).
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=", with: "")
    }
}
