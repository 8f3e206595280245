import Crypto
import Foundation

/// Hex SHA-256 of text: how secrets that clients hold (session tokens, refresh tokens) are stored.
public enum SHA256Hex {
    public static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
