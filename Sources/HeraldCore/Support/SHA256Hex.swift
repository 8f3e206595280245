import Crypto
import Foundation

/// Hex SHA-256 of text: how secrets that clients hold (session tokens, refresh tokens) are stored.
public enum SHA256Hex {
    public static func digest(_ text: String) -> String {
        hex(SHA256.hash(data: Data(text.utf8)))
    }

    /// Lowercase hex of any bytes (digests, MACs).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
