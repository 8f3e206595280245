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
        Self.withJobContext(jobID, destination) { seal(secret, contextBytes: $0) }
    }

    /// The secret sealed for `jobID` and `destination`.
    public func open(_ sealed: String, jobID: UUID, destination: String) throws(OpenError) -> String {
        try Self.withJobContext(jobID, destination) { context in Result { () throws(OpenError) in try open(sealed, contextBytes: context) } }.get()
    }

    /// `job:<id>:to:<destination>`, written into a buffer on the stack for `body` (every send seals its
    /// code under it: made as a `String` by interpolation, then copied into an array, it cost about
    /// 2,500 instructions).
    static func withJobContext<R>(_ jobID: UUID, _ destination: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var destination = destination
        return destination.withUTF8 { to in
            let count = 4 + 36 + 4 + to.count
            return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
                let text = buffer.baseAddress!
                text.copyMemory(from: "job:", byteCount: 4)
                jobID.writeLowercasedText(to: text + 4)
                (text + 40).copyMemory(from: ":to:", byteCount: 4)
                if let base = to.baseAddress { (text + 44).copyMemory(from: base, byteCount: to.count) }
                return body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// `nonce ‖ ciphertext ‖ tag`, base64, bound to `context` (authenticated, not encrypted).
    public func seal(_ secret: String, context: String) -> String {
        var context = context
        return context.withUTF8 { seal(secret, contextBytes: UnsafeRawBufferPointer($0)) }
    }

    /// Texts and the nonce are handed to AES-GCM as raw bytes where they lie: `Data` from a
    /// `String.UTF8View` casts dynamically on every call, and arrays were copies made for it.
    private func seal(_ secret: String, contextBytes context: UnsafeRawBufferPointer) -> String {
        // AES-GCM with a fresh random 96-bit nonce cannot fail for a 256-bit key. The nonce comes from
        // SecureRandom's pool: swift-crypto's own nonce is a getrandom(2) call per seal, two per send.
        withUnsafeTemporaryAllocation(byteCount: 12, alignment: 1) { nonceBytes in
            SecureRandom.fill(nonceBytes)
            let nonce = try! AES.GCM.Nonce(data: UnsafeRawBufferPointer(nonceBytes))
            var secret = secret
            let box = secret.withUTF8 { try! AES.GCM.seal(UnsafeRawBufferPointer($0), using: key, nonce: nonce, authenticating: context) }
            return box.combined!.base64EncodedString()
        }
    }

    /// The secret sealed for `context`.
    public func open(_ sealed: String, context: String) throws(OpenError) -> String {
        var context = context
        return try context.withUTF8 { context in Result { () throws(OpenError) in try open(sealed, contextBytes: UnsafeRawBufferPointer(context)) } }
            .get()
    }

    /// As in `seal`, the context read where it lies; the text validated where it lies.
    private func open(_ sealed: String, contextBytes context: UnsafeRawBufferPointer) throws(OpenError) -> String {
        do {
            guard let data = Data(base64Encoded: sealed) else { throw OpenError.invalid }
            let box = try AES.GCM.SealedBox(combined: data)
            let plain = try AES.GCM.open(box, using: key, authenticating: context)
            guard let text = String(validating: plain, as: UTF8.self) else { throw OpenError.invalid }
            return text
        } catch {
            throw .invalid
        }
    }
}
