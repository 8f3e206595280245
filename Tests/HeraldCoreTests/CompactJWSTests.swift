import Foundation
import HeraldCore
import Testing

@Suite("Compact JWS spelling")
struct CompactJWSTests {
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }

    @Test("every length of every segment in its canonical spelling is accepted; padding, stray bits, other bytes and other counts are not")
    func spellings() {
        for length in 0..<8 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 0xA5) }
            let segment = Self.base64URL(bytes)
            #expect(CompactJWS.isCanonical("\(segment).\(segment).\(segment)"), "\(length) bytes")
            if length % 3 != 0 {
                #expect(CompactJWS.isCanonical("a.b.\(segment)=") == false)
                let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
                let last = alphabet.firstIndex(of: segment.last!)!
                #expect(CompactJWS.isCanonical("AA.AA.\(segment.dropLast())\(alphabet[last ^ 1])") == false, "\(length) bytes, low bit set")
            }
        }
        for refused in ["", "a.b", "AA.AA.AA.AA", "AA.AA.A", "AA.AA.A+", "AA.AA.A/", "AA.AA.AA==", "AA.A A.AA", "AA.AA.AB"] {
            #expect(CompactJWS.isCanonical(refused) == false, "\(refused)")
        }
        #expect(CompactJWS.isCanonical("AA..AA"), "an empty payload is well-formed (detached)")
    }

    @Test("the Apple replay key follows what a token says: issuer, subject, issue time and nonce")
    func appleReplayKey() {
        let claims = AppleIdentityClaims(
            issuer: AppleIdentityCheck.issuer, audiences: ["a"], subject: "001.s", issuedAt: Date(timeIntervalSince1970: 1_700_000_000),
            expiresAt: Date(timeIntervalSince1970: 1_700_000_600), nonce: "n1")
        var other = claims
        other.audiences = ["b"]
        #expect(AppleIdentityCheck.replayKey(of: claims) == AppleIdentityCheck.replayKey(of: other))
        for change in [\AppleIdentityClaims.subject, \.issuer] {
            var changed = claims
            changed[keyPath: change] += "x"
            #expect(AppleIdentityCheck.replayKey(of: changed) != AppleIdentityCheck.replayKey(of: claims))
        }
        var renonced = claims
        renonced.nonce = "n2"
        #expect(AppleIdentityCheck.replayKey(of: renonced) != AppleIdentityCheck.replayKey(of: claims))
        var reissued = claims
        reissued.issuedAt += 1
        #expect(AppleIdentityCheck.replayKey(of: reissued) != AppleIdentityCheck.replayKey(of: claims))
    }
}
