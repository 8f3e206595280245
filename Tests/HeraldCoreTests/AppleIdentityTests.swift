import Foundation
import HeraldCore
import Testing

@Suite("Apple identity token checks and key-set refreshes")
struct AppleIdentityTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claims(_ change: (inout AppleIdentityClaims) -> Void = { _ in }) -> AppleIdentityClaims {
        var claims = AppleIdentityClaims(
            issuer: "https://appleid.apple.com", audiences: ["com.example.app"], subject: "001234.abcd", issuedAt: now.addingTimeInterval(-10),
            expiresAt: now.addingTimeInterval(590), nonce: AppleIdentityCheck.nonceHash("raw-nonce"))
        change(&claims)
        return claims
    }

    @Test("the nonce hash is the lowercase hex SHA-256 of the raw nonce")
    func nonceHash() {
        #expect(AppleIdentityCheck.nonceHash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("a token for one of the project's client ids, in its lifetime, with the right nonce, passes")
    func passes() {
        #expect(AppleIdentityCheck.refusal(claims(), clientIDs: ["com.example.app"], rawNonce: "raw-nonce", now: now) == nil)
        // A Services id listed second is as good as the bundle id; 59 s past exp is within the leeway.
        #expect(
            AppleIdentityCheck.refusal(
                claims {
                    $0.audiences = ["com.example.web"]
                    $0.expiresAt = now.addingTimeInterval(-59)
                },
                clientIDs: ["com.example.app", "com.example.web"], rawNonce: "raw-nonce", now: now) == nil)
    }

    @Test(
        "each check refuses with Identity Toolkit's code",
        arguments: [
            ("issuer", HeraldError.Code.invalidIdPResponse), ("audience", .invalidIdPResponse), ("expired", .invalidIdPResponse),
            ("future", .invalidIdPResponse), ("subject", .invalidIdPResponse), ("missing nonce", .missingOrInvalidNonce),
            ("wrong nonce", .missingOrInvalidNonce), ("no nonce claim", .missingOrInvalidNonce),
        ])
    func refusals(_ case: String, _ code: HeraldError.Code) {
        var token = claims()
        var raw: String? = "raw-nonce"
        switch `case` {
        case "issuer": token.issuer = "https://appleid.apple.com.evil"
        case "audience": token.audiences = ["com.other.app"]
        case "expired": token.expiresAt = now.addingTimeInterval(-61)
        case "future": token.issuedAt = now.addingTimeInterval(61)
        case "subject": token.subject = ""
        case "missing nonce": raw = nil
        case "wrong nonce": raw = "another"
        default: token.nonce = nil
        }
        let refusal = AppleIdentityCheck.refusal(token, clientIDs: ["com.example.app"], rawNonce: raw, now: now)
        #expect(refusal?.code == code, "\(`case`)")
    }

    @Test("the nonce errors carry Firebase's exact texts")
    func nonceTexts() {
        #expect(
            AppleIdentityCheck.refusal(claims(), clientIDs: ["com.example.app"], rawNonce: nil, now: now)?.message
                == "MISSING_OR_INVALID_NONCE : Nonce is missing in the request.")
        let hash = AppleIdentityCheck.nonceHash("raw-nonce")
        #expect(
            AppleIdentityCheck.refusal(claims(), clientIDs: ["com.example.app"], rawNonce: "other", now: now)?.message
                == "MISSING_OR_INVALID_NONCE : The nonce in ID Token \"\(hash)\" does not match the SHA256 hash of the raw nonce \"other\" in the request."
        )
        #expect(
            AppleIdentityCheck.duplicate.message
                == "MISSING_OR_INVALID_NONCE : Duplicate credential received. Please try again with a new credential.")
    }

    @Test("keys are fetched on first use, again after maxAge, and for an unknown kid at most once a minute")
    func refreshPolicy() {
        var policy = KeySetRefreshPolicy()
        #expect(policy.decide(keyKnown: false, now: now) == .fetch)
        policy.fetchStarted(at: now)
        policy.fetchFinished(succeeded: true, at: now)
        #expect(policy.decide(keyKnown: true, now: now.addingTimeInterval(10)) == .use)
        // A rotated key: fetch once, then refuse unknown kids until a minute has passed.
        #expect(policy.decide(keyKnown: false, now: now.addingTimeInterval(61)) == .fetch)
        policy.fetchStarted(at: now.addingTimeInterval(61))
        policy.fetchFinished(succeeded: true, at: now.addingTimeInterval(61))
        #expect(policy.decide(keyKnown: false, now: now.addingTimeInterval(90)) == .unknownKey)
        #expect(policy.decide(keyKnown: false, now: now.addingTimeInterval(121)) == .fetch)
        // Periodic refresh; a failed one keeps using the old keys and retries after the pause only.
        #expect(policy.decide(keyKnown: true, now: now.addingTimeInterval(61 + 3599)) == .use)
        #expect(policy.decide(keyKnown: true, now: now.addingTimeInterval(61 + 3600)) == .fetch)
        policy.fetchStarted(at: now.addingTimeInterval(3661))
        policy.fetchFinished(succeeded: false, at: now.addingTimeInterval(3661))
        #expect(policy.decide(keyKnown: true, now: now.addingTimeInterval(3662)) == .use)
        #expect(policy.decide(keyKnown: true, now: now.addingTimeInterval(3666)) == .fetch)
    }

    @Test("with no key set yet, a failed fetch answers unavailable for a short pause, then fetches again")
    func outage() {
        var policy = KeySetRefreshPolicy(failurePause: 5)
        policy.fetchStarted(at: now)
        policy.fetchFinished(succeeded: false, at: now)
        #expect(policy.decide(keyKnown: false, now: now.addingTimeInterval(2)) == .unavailable(retryAfter: 3))
        #expect(policy.decide(keyKnown: false, now: now.addingTimeInterval(5)) == .fetch)
    }
}
