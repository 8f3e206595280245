import HeraldCore
import Testing

@Suite("Password policy: Firebase's floor when off, each requirement in Firebase's words when enforced")
struct PasswordPolicyTests {
    @Test("policy off: only the 6-character floor, counted in characters, and the 4,096-byte cap")
    func off() {
        let policy = PasswordPolicy()
        #expect(policy.check("12345") == .weak)
        #expect(policy.check("123456") == nil)
        #expect(policy.check("ééééé") == .weak, "five characters, ten bytes")
        #expect(policy.check(String(repeating: "a", count: 4096)) == nil)
        #expect(policy.check(String(repeating: "a", count: 4097)) == .missing(["Password may contain at most 4096 bytes"]))
        #expect(PasswordPolicy.Refusal.weak.error.description.hasSuffix("WEAK_PASSWORD : Password should be at least 6 characters"))
    }

    @Test("enforced: each missing requirement is named, in order; non-Latin letters and digits count")
    func enforced() {
        let policy = PasswordPolicy(
            enforcement: .enforce, minLength: 10, maxLength: 20, requiresLowercase: true, requiresUppercase: true, requiresNumeric: true,
            requiresNonAlphanumeric: true)
        #expect(
            policy.check("abc")
                == .missing([
                    "Password must contain at least 10 characters", "Password must contain an upper case character",
                    "Password must contain a numeric character", "Password must contain a non-alphanumeric character",
                ]))
        #expect(policy.check("Abcdefghij1!") == nil)
        #expect(policy.check("ÄBCDÉFGHIJ٣!ü") == nil, "upper and lower case and digits of other scripts")
        #expect(policy.check("Abcdefghij1!" + String(repeating: "x", count: 9)) == .missing(["Password may contain at most 20 characters"]))
        #expect(policy.check("Abcdefghij12") == .missing(["Password must contain a non-alphanumeric character"]))
        #expect(policy.upgradeRequired("abc").isEmpty, "no force upgrade unless asked")
        var forcing = policy
        forcing.forceUpgradeOnSignin = true
        #expect(forcing.upgradeRequired("Abcdefghij1!").isEmpty && forcing.upgradeRequired("abc").count == 4)
    }
}
