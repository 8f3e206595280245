import Crypto
import Foundation

/// The secrets derived from `codes.sealingKey`: one key to seal codes inside jobs (AES-GCM), one to
/// hash codes at rest (HMAC-SHA256) and one to sign job bodies (HMAC-SHA256). Both processes that share the sealing key derive the same pair, and
/// neither derived key is ever the raw configured key.
public struct HeraldKeys: Sendable {
    /// Seals one-time codes and links inside job bodies.
    public let sealing: SymmetricKey
    /// Keys the hash under which codes are stored.
    public let codeHashing: SymmetricKey
    /// Signs job bodies (`JobSignature`), so workers send only what herald-api published.
    public let jobSigning: SymmetricKey
    /// `codeHashing` and `jobSigning` with their pads hashed once (a send uses both).
    public let codeHasher: KeyedHMAC
    public let jobSigner: KeyedHMAC
    /// Signs the status page's session cookies and CSRF tokens.
    public let adminSessions: SymmetricKey

    /// Derives both keys from 32 bytes of key material.
    public init(master: Data) {
        let material = SymmetricKey(data: master)
        let salt = Data("herald".utf8)
        self.sealing = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: material, salt: salt, info: Data("herald/seal/v1".utf8), outputByteCount: 32)
        self.codeHashing = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: material, salt: salt, info: Data("herald/code-hash/v1".utf8), outputByteCount: 32)
        self.jobSigning = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: material, salt: salt, info: Data("herald/job-signature/v1".utf8), outputByteCount: 32)
        self.codeHasher = KeyedHMAC(key: codeHashing)
        self.jobSigner = KeyedHMAC(key: jobSigning)
        self.adminSessions = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: material, salt: salt, info: Data("herald/admin-session/v1".utf8), outputByteCount: 32)
    }
}
