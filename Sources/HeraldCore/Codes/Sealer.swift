import Crypto
import Foundation

/// Seals secrets that must travel through the broker (codes, links, push secrets) with AES-GCM, bound to
/// the job id and its destination, so queues and dead-letter queues never hold a usable code, and a
/// sealed value moved to another job, or a job re-addressed to another number, cannot be opened.
public struct Sealer: Sendable {
    /// Why a sealed value could not be opened.
    public enum OpenError: Error, Equatable {
        /// Not base64, too short, or the tag did not verify (wrong key, wrong job, tampered).
        case invalid
    }

    private let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// `nonce ‖ ciphertext ‖ tag`, base64, bound to the job and where it goes (E.164 number, email
    /// address, APNs device token).
    public func seal(_ secret: String, jobID: UUID, destination: String) -> String {
        seal(secret, context: Self.jobContext(jobID, destination))
    }

    /// The secret sealed for `jobID` and `destination`.
    public func open(_ sealed: String, jobID: UUID, destination: String) throws(OpenError) -> String {
        try open(sealed, context: Self.jobContext(jobID, destination))
    }

    static func jobContext(_ jobID: UUID, _ destination: String) -> String {
        "job:\(jobID.lowercasedText):to:\(destination)"
    }

    /// `nonce ‖ ciphertext ‖ tag`, base64, bound to `context` (authenticated, not encrypted).
    public func seal(_ secret: String, context: String) -> String {
        // AES-GCM with a fresh random 96-bit nonce cannot fail for a 256-bit key. The nonce comes from
        // SecureRandom's pool: swift-crypto's own nonce is a getrandom(2) call per seal, two per send.
        let nonce = try! AES.GCM.Nonce(data: SecureRandom.bytes(12))
        let box = try! AES.GCM.seal(Array(secret.utf8), using: key, nonce: nonce, authenticating: Array(context.utf8))
        return box.combined!.base64EncodedString()
    }

    /// The secret sealed for `context`.
    public func open(_ sealed: String, context: String) throws(OpenError) -> String {
        // As in `seal`: the context as a byte array (`Data` from a `String.UTF8View` casts dynamically on
        // every call), and the text validated where it lies.
        do {
            guard let data = Data(base64Encoded: sealed) else { throw OpenError.invalid }
            let box = try AES.GCM.SealedBox(combined: data)
            let plain = try AES.GCM.open(box, using: key, authenticating: Array(context.utf8))
            guard let text = String(validating: plain, as: UTF8.self) else { throw OpenError.invalid }
            return text
        } catch {
            throw .invalid
        }
    }
}
