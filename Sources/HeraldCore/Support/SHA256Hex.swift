import Crypto
import Foundation

/// Hex SHA-256 of text: how secrets that clients hold (session tokens, refresh tokens) are stored.
public enum SHA256Hex {
    public static func digest(_ text: String) -> String {
        hex(SHA256.hash(data: Data(text.utf8)))
    }

    /// Lowercase hex of any bytes (digests, MACs); a table lookup per nibble, since this runs for every
    /// stored token and every signed job (String(format:) per byte was a visible share of a send's CPU).
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var position = 0
            for byte in bytes { HexDigits.write(byte, into: out, at: &position) }
            return position
        }
    }

    /// Digests and MACs are sequences, not collections: their 32 bytes are copied out first.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        hex(Array(bytes))
    }
}
