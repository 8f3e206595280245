import Crypto
import Foundation

/// Hex SHA-256 of text: how secrets that clients hold (session tokens, refresh tokens) are stored.
public enum SHA256Hex {
    public static func digest(_ text: String) -> String {
        hex(SHA256.hash(data: Data(text.utf8)))
    }

    /// Lowercase hex of any bytes (digests, MACs), four bytes' digits at a time from contiguous bytes:
    /// this runs for every stored token and every signed job (String(format:) per byte was a visible
    /// share of a send's CPU).
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ hex(contentsOf: UnsafeRawBufferPointer($0)) }) { return text }
        return hex(Array(bytes))
    }

    /// Lowercase hex of raw bytes (a digest's or MAC's own storage, without copying it out), after
    /// `prefix`.
    public static func hex(contentsOf bytes: UnsafeRawBufferPointer, prefix: StaticString = "") -> String {
        String(unsafeUninitializedCapacity: prefix.utf8CodeUnitCount + bytes.count * 2) { out in
            var position = 0
            for byte in UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount) {
                out[position] = byte
                position += 1
            }
            HexDigits.write(bytes, into: out, at: &position)
            return position
        }
    }

    /// A digest's bytes, read in place.
    public static func hex(_ digest: SHA256.Digest) -> String {
        digest.withUnsafeBytes { hex(contentsOf: $0) }
    }

    /// A MAC's bytes, read in place.
    public static func hex(_ mac: HashedAuthenticationCode<SHA256>) -> String {
        mac.withUnsafeBytes { hex(contentsOf: $0) }
    }

}
