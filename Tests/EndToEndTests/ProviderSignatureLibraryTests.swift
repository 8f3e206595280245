import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Herald's provider signatures, which its receipt endpoints check and its fakes make, against the
/// providers' own libraries from PyPI (`Tests/python/provider_signatures.py`): twilio's
/// RequestValidator, the Vonage SDK (v3 for the MD5-hash mode, v4 for HMAC-SHA256) and PyNaCl.
@Suite("Provider signatures against the providers' libraries")
struct ProviderSignatureLibraryTests {
    struct Result: Decodable {
        var signature: String
        var valid: Bool
        var publicKey: String?
    }

    /// Values that trip hand-written signers: separators, spaces, non-ASCII, empty values, names that
    /// prefix one another.
    static let values = ["+447700900123", "a&b=c", "two words", "é ß £ Код", "", "delivered", "100%", "x+y/z?"]

    static func run(_ cases: [[String: Any]]) async throws -> [Result] {
        let input = NSTemporaryDirectory() + "herald-signatures-\(UUID().uuidString).json"
        try JSONSerialization.data(withJSONObject: cases).write(to: URL(fileURLWithPath: input))
        defer { try? FileManager.default.removeItem(atPath: input) }
        let script = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/provider_signatures.py").path
        let output = try await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(script)) < \(shellQuoted(input))")
        return try JSONDecoder().decode([Result].self, from: Data(output.utf8))
    }

    @Test("Twilio: RequestValidator computes Herald's signature and accepts it, over URLs with queries and ports and awkward values")
    func twilio() async throws {
        var random = SystemRandomNumberGenerator()
        var cases: [[String: Any]] = []
        var expected: [String] = []
        for index in 0..<40 {
            let url = [
                "https://herald.example.com/callbacks/sms/twilio?job=\(UUID().uuidString.lowercased())",
                "https://herald.example.com:8443/callbacks/sms/t", "http://127.0.0.1:8080/callbacks/sms/twilio?job=1&x=%20y",
            ][index % 3]
            var parameters = ["MessageSid", "MessageStatus", "From", "FromCity", "To", "ErrorCode", "AccountSid"].map { name in
                (name: name, value: Self.values.randomElement(using: &random)!)
            }
            parameters.shuffle(using: &random)
            let token = String(UUID().uuidString.prefix(32))
            let signature = TwilioSignature.sign(url: url, parameters: parameters, authToken: token)
            expected.append(signature)
            cases.append(["kind": "twilio", "url": url, "params": parameters.map { [$0.name, $0.value] }, "token": token, "signature": signature])
        }
        let results = try await Self.run(cases)
        #expect(results.map(\.signature) == expected)
        #expect(results.allSatisfy { $0.valid })
    }

    @Test("Vonage: the SDK's MD5-hash and HMAC-SHA256 signatures are Herald's, and the SDK accepts Herald's")
    func vonage() async throws {
        var random = SystemRandomNumberGenerator()
        var cases: [[String: Any]] = []
        var expected: [String] = []
        for index in 0..<40 {
            let method: VonageSignature.Method = index % 2 == 0 ? .md5hash : .sha256
            var parameters = ["msisdn", "to", "messageId", "status", "err-code", "client-ref", "message-timestamp", "nonce"].reduce(
                into: [String: String]()
            ) { $0[$1] = Self.values.randomElement(using: &random)! }
            parameters["timestamp"] = "1800000000"
            let secret = String(UUID().uuidString.prefix(20))
            let signature = VonageSignature.sign(parameters, secret: secret, method: method)
            parameters["sig"] = signature
            expected.append(signature)
            cases.append(["kind": "vonage", "method": method.rawValue, "params": parameters, "secret": secret])
        }
        let results = try await Self.run(cases)
        #expect(results.map(\.signature) == expected)
        #expect(results.allSatisfy { $0.valid })
    }

    @Test("Telnyx: PyNaCl accepts Herald's Ed25519 signatures, and Herald accepts PyNaCl's")
    func telnyx() async throws {
        var cases: [[String: Any]] = []
        var keys: [Curve25519.Signing.PrivateKey] = []
        var bodies: [String] = []
        for index in 0..<10 {
            let seed = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            let key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
            let body = #"{"data":{"event_type":"message.finalized","id":"\#(index)","payload":{"text":"é ß"}}}"#
            keys.append(key)
            bodies.append(body)
            let signature = try TelnyxSignature.sign(timestamp: "1800000000", body: Data(body.utf8), privateKey: key)
            cases.append(["kind": "telnyx", "seed": seed.base64EncodedString(), "timestamp": "1800000000", "body": body, "signature": signature])
        }
        let results = try await Self.run(cases)
        #expect(results.allSatisfy { $0.valid })
        for (index, result) in results.enumerated() {
            #expect(result.publicKey == keys[index].publicKey.rawRepresentation.base64EncodedString())
            #expect(
                TelnyxSignature.isValid(
                    signature: result.signature, timestamp: "1800000000", body: Data(bodies[index].utf8),
                    publicKey: keys[index].publicKey.rawRepresentation, now: Date(timeIntervalSince1970: 1_800_000_000)))
        }
    }
}
