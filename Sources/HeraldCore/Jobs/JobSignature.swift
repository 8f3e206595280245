import Crypto
import Foundation

/// Proof that a job came from herald-api: `x-herald-signature: sha256=<hex HMAC-SHA256(body)>` under a
/// key derived from `codes.sealingKey` (`HeraldKeys.jobSigning`).
///
/// Anyone with broker credentials can publish to the exchange; without this, such a publisher could
/// have workers send any text to any number past every limit. Workers send only jobs whose body
/// verifies (and that match the API's ledger row); the rest are dead-lettered as unauthenticated.
/// The body is signed as published, so retries, throttling and replays carry the header unchanged.
public enum JobSignature {
    /// The AMQP header that carries the signature.
    public static let header = JobHeader.signature

    /// `sha256=<64 hex digits>`.
    public static func sign(_ body: Data, key: SymmetricKey) -> String {
        sign(body, signer: KeyedHMAC(key: key))
    }

    /// The same signature under a key whose pads were hashed once (`HeraldKeys.jobSigner`).
    public static func sign(_ body: Data, signer: KeyedHMAC) -> String {
        // The MAC's bytes read in place and written after the prefix into one string: an array copy
        // and a concatenation fewer per signed job.
        signer.authenticationCode(for: body).withUnsafeBytes { SHA256Hex.hex(contentsOf: $0, prefix: "sha256=") }
    }

    /// True when `signature` is a valid `sha256=` HMAC of `body` under `key` (compared in constant time).
    public static func verify(_ body: Data, signature: String?, key: SymmetricKey) -> Bool {
        verify(body, signature: signature, signer: KeyedHMAC(key: key))
    }

    /// The same check under a key whose pads were hashed once: a worker verifies every job it takes.
    public static func verify(_ body: Data, signature: String?, signer: KeyedHMAC) -> Bool {
        guard var signature, signature.hasPrefix("sha256=") else { return false }
        // Decoded from the text's own UTF-8 buffer: through `Substring.UTF8View`, each digit cost about
        // 57 instructions (a worker verifies every job it takes).
        let prefix = "sha256=".utf8.count
        guard let mac = signature.withUTF8({ Self.bytes(hex: UnsafeBufferPointer(rebasing: $0[prefix...])) }), mac.count == 32 else {
            return false
        }
        return signer.isValid(mac, for: body)
    }

    /// The same check under a raw secret (`sms.http.callbackSecret` for delivery receipts).
    public static func verify(_ body: Data, signature: String?, secret: Data) -> Bool {
        verify(body, signature: signature, key: SymmetricKey(data: secret))
    }

    /// Hex digits (either case) as bytes; nil for an odd count or anything else.
    static func bytes(hex: some Collection<UInt8>) -> [UInt8]? {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var high: UInt8?
        for digit in hex {
            guard let value = HexDigits.value(of: digit) else { return nil }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }
}
