import Crypto
import Foundation
import HeraldCore
import Testing

/// Providers' signature rules on known answers; `ProviderSignatureLibraryTests` checks the same
/// against the providers' own libraries.
@Suite("Provider signatures")
struct ProviderSignatureTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("Twilio: the published example, with and without the default port, in constant-time compare")
    func twilioVector() {
        let parameters = [
            ("CallSid", "CA1234567890ABCDE"), ("Caller", "+12349013030"), ("Digits", "1234"), ("From", "+12349013030"), ("To", "+18005551212"),
        ].map { (name: $0.0, value: $0.1) }
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2"
        #expect(TwilioSignature.sign(url: url, parameters: parameters, authToken: "12345") == "0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        let withPort = "https://mycompany.com:443/myapp.php?foo=1&bar=2"
        #expect(TwilioSignature.sign(url: withPort, parameters: parameters, authToken: "12345") == "EpDEmp1PyjDYp77YxYU3GILBWzE=")
        for signature in ["0/KCTR6DLpKmkAf8muzZqo1nDgQ=", "EpDEmp1PyjDYp77YxYU3GILBWzE="] {
            #expect(TwilioSignature.isValid(signature, url: url, parameters: parameters, authToken: "12345"))
            #expect(TwilioSignature.isValid(signature, url: withPort, parameters: parameters, authToken: "12345"))
        }
        #expect(TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", url: url, parameters: parameters, authToken: "54321") == false)
        #expect(
            TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", url: url, parameters: Array(parameters.dropLast()), authToken: "12345") == false)
        #expect(TwilioSignature.isValid("0/KCTR6DLpKmkAf8muzZqo1nDgQ=", url: url + "&x=1", parameters: parameters, authToken: "12345") == false)
    }

    @Test("Twilio: names sorted before values, so a name that prefixes another (From, FromCity) keeps its place")
    func twilioSortsByName() {
        let parameters = [(name: "FromCity", value: "A"), (name: "From", value: "Zeta")]
        let expected = HMAC<Insecure.SHA1>.authenticationCode(
            for: Data("https://h/cbFromZetaFromCityA".utf8), using: SymmetricKey(data: Data("t".utf8)))
        #expect(TwilioSignature.sign(url: "https://h/cb", parameters: parameters, authToken: "t") == Data(expected).base64EncodedString())
    }

    @Test("Vonage: & and = in values become _, sig itself is left out, the timestamp must be recent")
    func vonage() {
        var parameters = ["msisdn": "447700900123", "status": "delivered", "client-ref": "a&b=c", "timestamp": "1800000000"]
        let md5 = VonageSignature.sign(parameters, secret: "secret", method: .md5hash)
        let text = "&client-ref=a_b_c&msisdn=447700900123&status=delivered&timestamp=1800000000"
        #expect(md5 == Insecure.MD5.hash(data: Data((text + "secret").utf8)).map { String(format: "%02x", $0) }.joined())
        parameters["sig"] = md5.uppercased()
        #expect(VonageSignature.sign(parameters, secret: "secret", method: .md5hash) == md5, "sig is not signed")
        #expect(VonageSignature.isValid(parameters, secret: "secret", method: .md5hash, now: Self.now.addingTimeInterval(299)))
        #expect(VonageSignature.isValid(parameters, secret: "secret", method: .md5hash, now: Self.now.addingTimeInterval(301)) == false)
        #expect(VonageSignature.isValid(parameters, secret: "other", method: .md5hash, now: Self.now) == false)
        #expect(VonageSignature.isValid(parameters, secret: "secret", method: .sha256, now: Self.now) == false)
        parameters["sig"] = VonageSignature.sign(parameters, secret: "secret", method: .sha256)
        #expect(VonageSignature.isValid(parameters, secret: "secret", method: .sha256, now: Self.now))
        parameters["status"] = "failed"
        #expect(VonageSignature.isValid(parameters, secret: "secret", method: .sha256, now: Self.now) == false)
    }

    @Test("Telnyx: Ed25519 over timestamp|body under the public key, within 300 s")
    func telnyx() throws {
        let key = Curve25519.Signing.PrivateKey()
        let body = Data(#"{"data":{"event_type":"message.finalized"}}"#.utf8)
        let signature = try TelnyxSignature.sign(timestamp: "1800000000", body: body, privateKey: key)
        let publicKey = key.publicKey.rawRepresentation
        #expect(TelnyxSignature.isValid(signature: signature, timestamp: "1800000000", body: body, publicKey: publicKey, now: Self.now))
        #expect(TelnyxSignature.isValid(signature: signature, timestamp: "1800000001", body: body, publicKey: publicKey, now: Self.now) == false)
        #expect(
            TelnyxSignature.isValid(signature: signature, timestamp: "1800000000", body: body + Data(" ".utf8), publicKey: publicKey, now: Self.now)
                == false)
        #expect(
            TelnyxSignature.isValid(
                signature: signature, timestamp: "1800000000", body: body, publicKey: publicKey, now: Self.now.addingTimeInterval(301))
                == false)
        #expect(
            TelnyxSignature.isValid(signature: "bm90IGEgc2lnbmF0dXJl", timestamp: "1800000000", body: body, publicKey: publicKey, now: Self.now)
                == false)
    }
}
