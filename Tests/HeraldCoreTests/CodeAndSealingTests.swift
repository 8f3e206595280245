import Crypto
import Foundation
import HeraldCore
import Testing

@Suite("One-time codes and sealing")
struct CodeAndSealingTests {
    let keys = HeraldKeys(master: Data(repeating: 7, count: 32))

    @Test("codes have the requested length, only digits, and leading zeros occur")
    func generation() {
        let codes = (0..<2000).map { _ in OneTimeCode.generate(length: 6) }
        #expect(codes.allSatisfy { OneTimeCode.isWellFormed($0, length: 6) })
        // P(no leading zero in 2000 draws) = 0.9^2000: never in practice.
        #expect(codes.contains { $0.hasPrefix("0") })
        #expect(Set(codes).count > 1900)
        #expect(OneTimeCode.generate(length: 10).count == 10)
    }

    @Test("hashes verify only the same code in the same session under the same key")
    func hashing() {
        let hash = OneTimeCode.hash("012345", session: "s1", key: keys.codeHashing)
        #expect(OneTimeCode.matches("012345", session: "s1", storedHash: hash, key: keys.codeHashing))
        #expect(OneTimeCode.matches("012346", session: "s1", storedHash: hash, key: keys.codeHashing) == false)
        #expect(OneTimeCode.matches("012345", session: "s2", storedHash: hash, key: keys.codeHashing) == false)
        let otherKeys = HeraldKeys(master: Data(repeating: 8, count: 32))
        #expect(OneTimeCode.matches("012345", session: "s1", storedHash: hash, key: otherKeys.codeHashing) == false)
        #expect(hash.count == 32)
        #expect(hash != Data("012345".utf8))
    }

    @Test("the derived keys differ from each other and from the master")
    func derivation() {
        let sealing = keys.sealing.withUnsafeBytes { Data($0) }
        let hashing = keys.codeHashing.withUnsafeBytes { Data($0) }
        #expect(sealing != hashing)
        #expect(sealing != Data(repeating: 7, count: 32))
    }

    @Test("constant-time equality")
    func constantTime() {
        #expect(constantTimeEquals(Array("abc".utf8), Array("abc".utf8)))
        #expect(constantTimeEquals(Array("abc".utf8), Array("abd".utf8)) == false)
        #expect(constantTimeEquals(Array("abc".utf8), Array("abcd".utf8)) == false)
    }

    @Test("sealing round-trips and binds the secret to its job")
    func sealing() throws {
        let sealer = Sealer(key: keys.sealing)
        let job = UUID()
        let sealed = sealer.seal("654321", jobID: job, destination: "+15555550100")
        #expect(sealed.contains("654321") == false)
        #expect(try sealer.open(sealed, jobID: job, destination: "+15555550100") == "654321")
        // Re-addressed to another number: it does not open.
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(sealed, jobID: job, destination: "+15555550199") }
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(sealed, jobID: UUID(), destination: "+15555550100") }
        #expect(throws: Sealer.OpenError.invalid) {
            try Sealer(key: HeraldKeys(master: Data(count: 32)).sealing).open(sealed, jobID: job, destination: "+15555550100")
        }
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open("not base64!", jobID: job, destination: "+15555550100") }
        var tampered = Data(base64Encoded: sealed)!
        tampered[tampered.count - 1] ^= 1
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(tampered.base64EncodedString(), jobID: job, destination: "+15555550100") }
        // Fresh nonce each time.
        #expect(sealer.seal("654321", jobID: job, destination: "+15555550100") != sealed)
    }
}
