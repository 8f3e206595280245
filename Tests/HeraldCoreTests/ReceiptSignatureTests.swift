import Crypto
import Foundation
import HeraldCore
import Testing

/// The generic gateway's receipt signature, without a server: the timestamp is signed with the body and
/// must be within five minutes of the receiver's clock.
@Suite("Receipt signatures")
struct ReceiptSignatureTests {
    static let secret = Data((0..<32).map { UInt8($0 * 3 % 256) })
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let body = Data(#"{"reference":"3f0c","status":"delivered"}"#.utf8)

    func verify(_ timestamp: String?, _ signature: String?, body: Data = Self.body) -> Bool {
        if case .success = ReceiptSignature(secret: Self.secret).verify(body, timestamp: timestamp, signature: signature, now: Self.now) {
            return true
        }
        return false
    }

    @Test("the signature is HMAC-SHA256 of \"<timestamp>.<body>\", accepted within ±300 s and refused outside")
    func window() {
        let signer = ReceiptSignature(secret: Self.secret)
        for offset in [-300, -1, 0, 1, 300] {
            let timestamp = "\(1_800_000_000 + offset)"
            #expect(verify(timestamp, signer.sign(Self.body, timestamp: timestamp)), "\(offset) s")
        }
        for offset in [-301, 301, -86_400] {
            let timestamp = "\(1_800_000_000 + offset)"
            #expect(verify(timestamp, signer.sign(Self.body, timestamp: timestamp)) == false, "\(offset) s")
        }
        let expected = HMAC<SHA256>.authenticationCode(
            for: Data("1800000000.".utf8) + Self.body, using: SymmetricKey(data: Self.secret))
        #expect(signer.sign(Self.body, timestamp: "1800000000") == "sha256=" + expected.map { String(format: "%02x", $0) }.joined())
    }

    @Test("a body-only signature, a missing or malformed timestamp, another body or secret are refused")
    func refusals() {
        let signer = ReceiptSignature(secret: Self.secret)
        let timestamp = "1800000000"
        let good = signer.sign(Self.body, timestamp: timestamp)
        let bodyOnly = JobSignature.sign(Self.body, key: SymmetricKey(data: Self.secret))
        #expect(verify(timestamp, bodyOnly) == false)
        #expect(verify(nil, good) == false)
        #expect(verify(timestamp, nil) == false)
        for malformed in ["", "+1800000000", "1800000000.0", " 1800000000", "1.8e9", "-1", "18000000000000"] {
            #expect(verify(malformed, good) == false, "\(malformed)")
        }
        #expect(verify("1800000001", good) == false, "the signed timestamp, not another")
        #expect(verify(timestamp, good, body: Self.body + Data(" ".utf8)) == false)
        #expect(verify(timestamp, ReceiptSignature(secret: Data(repeating: 9, count: 32)).sign(Self.body, timestamp: timestamp)) == false)
        if case .failure(let refusal) = signer.verify(Self.body, timestamp: timestamp, signature: bodyOnly, now: Self.now) {
            #expect(refusal.message.contains(bodyOnly.dropFirst(7)) == false, "the MAC is not echoed")
            #expect(refusal.message.contains("X-Herald-Timestamp"))
        }
    }
}
