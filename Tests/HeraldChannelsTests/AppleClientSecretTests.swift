import Crypto
import Foundation
import HeraldChannels
import Testing

@Suite("Sign in with Apple client secret")
struct AppleClientSecretTests {
    static func segments(_ jwt: String) -> (header: [String: Any], claims: [String: Any], signature: Data, signed: Data) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        func data(_ text: String) -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            return Data(base64Encoded: base64) ?? Data()
        }
        func object(_ text: String) -> [String: Any] { (try? JSONSerialization.jsonObject(with: data(text))) as? [String: Any] ?? [:] }
        return (object(parts[0]), object(parts[1]), data(parts[2]), Data((parts[0] + "." + parts[1]).utf8))
    }

    @Test("an ES256 JWT with kid, iss = team, sub = client id, aud = appleid.apple.com, signed r‖s by the .p8 key")
    func shape() async throws {
        let key = P256.Signing.PrivateKey()
        let secrets = try AppleClientSecret(keyPEM: key.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456")
        let now = Date(timeIntervalSince1970: 1_800_000_000.7)
        let (header, claims, signature, signed) = Self.segments(try await secrets.secret(clientID: "com.example.app", now: now))
        #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "KEY1234567")
        #expect(claims["iss"] as? String == "TEAM123456" && claims["sub"] as? String == "com.example.app")
        #expect(claims["aud"] as? String == "https://appleid.apple.com")
        let issued = try #require(claims["iat"] as? Int)
        let expires = try #require(claims["exp"] as? Int)
        #expect(issued == 1_800_000_000)
        #expect(expires - issued == Int(AppleClientSecret.lifetime) && expires - issued <= 15_777_000)
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(key.publicKey.isValidSignature(ecdsa, for: signed))
    }

    @Test("one secret per client id, reused until less than a day of it is left, then minted again")
    func caching() async throws {
        let secrets = try AppleClientSecret(keyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try await secrets.secret(clientID: "com.example.app", now: start)
        #expect(try await secrets.secret(clientID: "com.example.app", now: start.addingTimeInterval(28 * 86_400)) == first)
        #expect(try await secrets.secret(clientID: "com.example.web", now: start) != first)
        let renewed = try await secrets.secret(clientID: "com.example.app", now: start.addingTimeInterval(29 * 86_400 + 1))
        #expect(renewed != first)
        #expect(Self.segments(renewed).claims["iat"] as? Int == 1_800_000_000 + 29 * 86_400 + 1)
    }

    @Test("a key that is not P-256 PKCS#8 is refused at start-up")
    func badKey() {
        #expect(throws: (any Error).self) {
            try AppleClientSecret(keyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", keyID: "K", teamID: "T")
        }
    }
}
