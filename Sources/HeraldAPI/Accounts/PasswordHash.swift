import Crypto
import CryptoExtras
import Foundation
import HeraldCore

/// Passwords as stored: PBKDF2-HMAC-SHA256, 210 000 rounds (OWASP's floor, and swift-crypto's), 16-byte
/// salt, `pbkdf2-sha256$<rounds>$<salt b64>$<hash b64>`. Herald has no password sign-in; it keeps a
/// password an admin set so `createAuthUri` can report it and an email link can remove it.
enum PasswordHash {
    static let rounds = 210_000
    static let minimumLength = 6

    /// Hashes on a thread of its own: PBKDF2 is 0.2 s of CPU (seconds in a debug build), which on Swift's
    /// cooperative pool (one thread per core) would hold up every other request's tasks for as long.
    static func make(_ password: String) async throws -> String {
        try await onOwnThread { try hash(password) }
    }

    static func hash(_ password: String) throws -> String {
        let salt = SecureRandom.bytes(16)
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(password.utf8), salt: salt, using: .sha256, outputByteCount: 32, rounds: rounds)
        let hash = key.withUnsafeBytes { Data($0) }
        return "pbkdf2-sha256$\(rounds)$\(Data(salt).base64EncodedString())$\(hash.base64EncodedString())"
    }
}
