import Crypto
import Foundation

/// Hex SHA-256 of text: how secrets that clients hold (session tokens, refresh tokens) are stored.
public enum SHA256Hex {
    public static func digest(_ text: String) -> String {
        hex(SHA256.hash(data: Data(text.utf8)))
    }

    /// Lowercase hex of any bytes (digests, MACs); a table lookup per nibble, since this runs for every
    /// stored token and every signed job (String(format:) per byte was a visible share of a send's CPU).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
