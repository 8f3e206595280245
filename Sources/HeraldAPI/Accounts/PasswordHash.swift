import CCrypt
import Crypto
import CryptoExtras
import Foundation
import HeraldCore

/// Computes and checks password hashes (`StoredPassword` is their stored form). Herald's own are
/// PBKDF2-HMAC-SHA256, 210,000 rounds (OWASP's floor, and swift-crypto's), 16-byte salt, 32-byte key.
/// Imported ones are checked in the algorithm they came in; `needsRehash` says when a successful
/// sign-in should replace one with Herald's.
///
/// Every hash runs on a thread of its own: PBKDF2 is about 22 ms of CPU (seconds in a debug build), and
/// on Swift's cooperative pool (one thread per core) it would hold up every other request for as long.
/// At most one hash per core runs at a time, at the lowest priority (`HashLane`).
enum PasswordHash {
    static let rounds = 210_000
    static let lane = HashLane(permits: ProcessInfo.processInfo.activeProcessorCount)

    /// A hash of a password nobody has, with Herald's parameters: an unknown address is checked against
    /// it so that it takes as long as a known one.
    static let decoy: StoredPassword = .pbkdf2(
        digest: .sha256, rounds: rounds, salt: Array(repeating: 0x5A, count: 16), hash: Array(repeating: 0, count: 32))

    static func make(_ password: String) async throws -> String {
        try await lane.run { try hash(password) }
    }

    static func hash(_ password: String) throws -> String {
        let salt = SecureRandom.bytes(16)
        let key = try KDF.Insecure.PBKDF2.deriveKey(from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32, rounds: rounds)
        return StoredPassword.pbkdf2(digest: .sha256, rounds: rounds, salt: salt, hash: key.withUnsafeBytes { Array($0) }).text
    }

    /// True when `password` matches `stored`; false for a mismatch, an unreadable hash, or one Herald
    /// cannot verify.
    static func verify(_ password: String, against stored: StoredPassword) async -> Bool {
        (try? await lane.run { matches(password, stored) }) ?? false
    }

    /// Whether a matching hash should become Herald's own (any other algorithm or parameters).
    static func needsRehash(_ stored: StoredPassword) -> Bool {
        guard case .pbkdf2(.sha256, let storedRounds, let salt, let hash) = stored else { return true }
        return storedRounds < rounds || salt.count < 16 || hash.count < 32
    }

    static func matches(_ password: String, _ stored: StoredPassword) -> Bool {
        let phrase = Array(password.utf8)
        switch stored {
        case .pbkdf2(let digest, let rounds, let salt, let hash):
            guard
                let key = try? KDF.Insecure.PBKDF2.deriveKey(
                    from: phrase, salt: salt, using: digest == .sha1 ? .insecureSHA1 : .sha256, outputByteCount: hash.count,
                    unsafeUncheckedRounds: rounds)
            else { return false }
            return constantTimeEqual(key.withUnsafeBytes { Array($0) }, hash)
        case .firebaseScrypt(let f):
            // Firebase's modified scrypt: the key scrypt derives from the password (salt + separator,
            // N = 2^memoryCost, r = rounds, p = 1) encrypts the project's signer key with AES-256-CTR under
            // an all-zero counter block; the ciphertext is the stored hash.
            guard
                let key = try? KDF.Scrypt.deriveKey(
                    from: phrase, salt: f.salt + f.saltSeparator, outputByteCount: 32, rounds: 1 << f.memoryCost, blockSize: f.rounds,
                    parallelism: 1),
                let nonce = try? AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16)),
                let cipher = try? AES._CTR.encrypt(f.signerKey, using: key, nonce: nonce)
            else { return false }
            return constantTimeEqual(Array(cipher), f.hash)
        case .scrypt(let n, let r, let p, let salt, let hash):
            guard
                let key = try? KDF.Scrypt.deriveKey(
                    from: phrase, salt: salt, outputByteCount: hash.count, rounds: n, blockSize: r, parallelism: p)
            else { return false }
            return constantTimeEqual(key.withUnsafeBytes { Array($0) }, hash)
        case .hmac(let digest, let passwordFirst, let key, let salt, let hash):
            let message = passwordFirst ? phrase + salt : salt + phrase
            let symmetric = SymmetricKey(data: key)
            let mac: [UInt8]
            switch digest {
            case .sha256: mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: symmetric))
            case .sha512: mac = Array(HMAC<SHA512>.authenticationCode(for: message, using: symmetric))
            case .sha1: mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: symmetric))
            case .md5: mac = Array(HMAC<Insecure.MD5>.authenticationCode(for: message, using: symmetric))
            }
            return constantTimeEqual(mac, hash)
        case .bcrypt(let crypt):
            // bcrypt reads at most 72 bytes and stops at a NUL; a password with one cannot match.
            guard phrase.contains(0) == false else { return false }
            var out = [CChar](repeating: 0, count: Int(CRYPT_OUTPUT_SIZE))
            guard herald_crypt(password, crypt, &out) == 0 else { return false }
            let computed = Array(String(cString: out).utf8)
            return constantTimeEqual(computed, Array(crypt.utf8))
        case .unverifiable:
            return false
        }
    }

    /// Compares in time that depends only on the lengths.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<a.count { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
