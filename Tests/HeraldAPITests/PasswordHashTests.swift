import Foundation
import HeraldCore
import Testing

@testable import HeraldAPI

/// Every stored password form against hashes made elsewhere: Firebase's published modified-scrypt
/// vectors, and PBKDF2, HMAC, standard scrypt and bcrypt hashes from Python's hashlib, hmac and crypt.
@Suite("Password hashes: Herald's own and every imported algorithm, against foreign vectors")
struct PasswordHashTests {
    static func bytes(_ base64: String) -> [UInt8] { LenientBase64.decode(base64)! }
    static let salt = Array("pinch-of-salt".utf8)

    @Test("Firebase's modified scrypt: the vector firebase/scrypt publishes, and the one firebase-admin's tests import")
    func firebaseScrypt() {
        let key = Self.bytes("jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==")
        let published = StoredPassword.firebaseScrypt(
            .init(
                signerKey: key, saltSeparator: Self.bytes("Bw=="), rounds: 8, memoryCost: 14, salt: Self.bytes("42xEC+ixf3L2lw=="),
                hash: Self.bytes("lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==")))
        #expect(PasswordHash.matches("user1password", published))
        #expect(PasswordHash.matches("user1passwordX", published) == false)
        #expect(StoredPassword(text: published.text) == published, "the stored text reads back")
        let admins = StoredPassword.firebaseScrypt(
            .init(
                signerKey: key, saltSeparator: Self.bytes("Bw=="), rounds: 8, memoryCost: 14, salt: Array("NaCl".utf8),
                hash: Self.bytes("V358E8LdWJXAO7muq0CufVpEOXaj8aFiC7T/rcaGieN04q/ZPJ08WhJEHGjj9lz/2TT+/86N5VjVoc5DdBhBiw==")))
        #expect(PasswordHash.matches("password", admins))
        #expect(PasswordHash.needsRehash(admins))
    }

    @Test("PBKDF2 (SHA-256, SHA-1), HMAC in both orders, standard scrypt and bcrypt match Python's hashes and nothing else")
    func importedAlgorithms() {
        let cases: [StoredPassword] = [
            .pbkdf2(
                digest: .sha256, rounds: 100_000, salt: Self.salt,
                hash: Self.bytes("+Sw0midmQOXZJBn+cjiIW4X0ykWPKStplkxiW4KrtS1kV5RW8vxqLKbUK4vCGjeTilgcGibKpk5GRvVBJWOy/Q==")),
            .pbkdf2(digest: .sha1, rounds: 1000, salt: Self.salt, hash: Self.bytes("IK4bhI9O8eZcRbrsRoK+3HPS4us=")),
            .hmac(
                digest: .sha256, passwordFirst: true, key: Array("secret".utf8), salt: Self.salt,
                hash: Self.bytes("qVczxChjG/juu+pbJBspBg/sacqXnMMSB9mKrw5yzcM=")),
            .hmac(
                digest: .sha512, passwordFirst: false, key: Array("secret".utf8), salt: Self.salt,
                hash: Self.bytes("PvKtcCtrGxB3W/YvLUWHyr6hfQrNVaddjNOlZz/bPiyLoDU/fBuOTYV3ggnY2WrwtgZp5EA+UfW5ysncW5fRvQ==")),
            .scrypt(
                n: 16384, r: 8, p: 1, salt: Self.salt,
                hash: Self.bytes("5LTNKtmUt8ZlOuuYa8fVL93Ta3y+l42ev0/VOq0SbqeYH9wkViin/zhcoJYPaV7aeoseGhHLQ+sxxLd9n8JMjQ==")),
            .bcrypt("$2b$06$IY9Np1VQesLtz5.IIHxSLOm57J8il5wcLKqXHGy5gOp7ceHuQgl6K"),
        ]
        for stored in cases {
            #expect(PasswordHash.matches("correct horse", stored), "\(stored.algorithm)")
            #expect(PasswordHash.matches("correct horsf", stored) == false, "\(stored.algorithm)")
            #expect(StoredPassword(text: stored.text) == stored, "\(stored.algorithm) reads back")
            #expect(PasswordHash.needsRehash(stored), "\(stored.algorithm) becomes Herald's at its first sign-in")
        }
        #expect(PasswordHash.matches("correct horse", .unverifiable(algorithm: "MD5")) == false)
    }

    @Test("Herald's own hash: verifies, needs no rehash, and reads the form earlier stores hold")
    func own() throws {
        let text = try PasswordHash.hash("tr0ub4dor")
        #expect(text.hasPrefix("pbkdf2-sha256$210000$"))
        let stored = try #require(StoredPassword(text: text))
        #expect(PasswordHash.matches("tr0ub4dor", stored) && PasswordHash.matches("tr0ub4dor ", stored) == false)
        #expect(PasswordHash.needsRehash(stored) == false)
        #expect(PasswordHash.matches("anything", PasswordHash.decoy) == false)
    }

    @Test("malformed or out-of-bounds stored texts are not read (a crafted import cannot ask for a huge scrypt)")
    func bounds() {
        for text in [
            "", "pbkdf2-sha256$0$AA==$AA==", "pbkdf2-sha256$x$AA==$AA==", "scrypt$3$8$1$AA==$AA==", "scrypt$4194304$8$1$AA==$AA==",
            "firebase-scrypt$30$8$Bw==$AA==$AA==$AA==", "hmac-sha384$ps$AA==$AA==$AA==", "bcrypt$$2x$10$abc", "unverifiable$", "md5$AA==",
        ] {
            #expect(StoredPassword(text: text) == nil, "\(text)")
        }
    }

    @Test("import options: each Firebase hashAlgorithm with its parameters, and the refusals")
    func importOptions() throws {
        let fields = ["signerKey": "c2VjcmV0", "rounds": "8", "memoryCost": "14", "saltSeparator": "Bw"]
        let scrypt = try PasswordImport(hashAlgorithm: "SCRYPT") { fields[$0] }
        guard case .firebaseScrypt(let key, let separator, 8, 14) = scrypt.algorithm else {
            Issue.record("not Firebase scrypt: \(scrypt.algorithm)")
            return
        }
        #expect(key == Array("secret".utf8) && separator == [7])
        #expect(throws: ImportProblem.self) { try PasswordImport(hashAlgorithm: "SCRYPT") { ["rounds": "8"][$0] } }
        #expect(throws: ImportProblem.self) { try PasswordImport(hashAlgorithm: "PBKDF2_SHA256") { ["rounds": "0"][$0] } }
        #expect(throws: ImportProblem.self) { try PasswordImport(hashAlgorithm: "ROT13") { _ in nil } }
        let md5 = try PasswordImport(hashAlgorithm: "MD5") { _ in nil }
        #expect(try md5.stored(hash: [1, 2, 3], salt: []) == .unverifiable(algorithm: "MD5"))
        let bcrypt = try PasswordImport(hashAlgorithm: "BCRYPT") { _ in nil }
        #expect(throws: ImportProblem.self) { try bcrypt.stored(hash: Array("not bcrypt".utf8), salt: []) }
    }

    @Test("the hash lane runs at most its permits at once and every queued hash still runs")
    func lane() async throws {
        let lane = HashLane(permits: 2)
        let state = LaneCount()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await lane.run {
                        state.withLock {
                            $0.now += 1
                            $0.most = max($0.most, $0.now)
                        }
                        usleep(20_000)
                        state.withLock {
                            $0.now -= 1
                            $0.done += 1
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let (most, done) = state.withLock { ($0.most, $0.done) }
        #expect(most == 2 && done == 8)
    }
}

/// What the lane test counts, shared by its tasks and the hashing threads.
private final class LaneCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = (now: 0, most: 0, done: 0)

    func withLock<T>(_ body: (inout (now: Int, most: Int, done: Int)) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
