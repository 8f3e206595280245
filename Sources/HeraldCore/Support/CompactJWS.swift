/// The shape of a JWT in compact serialization (RFC 7515 §7.1): three segments of base64url without
/// padding (RFC 7515 §2), each in its one canonical spelling.
///
/// A decoder that ignores padding or the unused low bits of a segment's last character accepts several
/// texts for the same bytes, so anything keyed on a token's text (a once-only check) could be replayed
/// under another spelling. Herald refuses every other spelling before it verifies a token.
public enum CompactJWS {
    /// True when `token` is three segments of unpadded base64url, each with zero unused bits.
    public static func isCanonical(_ token: String) -> Bool {
        var segments = 0
        var length = 0
        var last: UInt8 = 0
        for byte in token.utf8 {
            if byte == UInt8(ascii: ".") {
                guard isCanonicalEnd(length: length, last: last) else { return false }
                segments += 1
                length = 0
                continue
            }
            guard let value = sextet(byte) else { return false }
            length += 1
            last = value
        }
        return segments == 2 && isCanonicalEnd(length: length, last: last)
    }

    /// A segment of `length` characters ending in the 6-bit value `last`: 2 leftover characters carry 12
    /// bits for one byte (the low 4 unused), 3 carry 18 bits for two (the low 2 unused); 1 is never valid.
    static func isCanonicalEnd(length: Int, last: UInt8) -> Bool {
        switch length % 4 {
        case 0: return true
        case 2: return last & 0x0F == 0
        case 3: return last & 0x03 == 0
        default: return false
        }
    }

    static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
