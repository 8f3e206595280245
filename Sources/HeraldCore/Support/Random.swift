import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random values from the system CSPRNG, encoded the ways the wire needs them.
///
/// Bytes are drawn a buffer at a time: `SystemRandomNumberGenerator` makes one system call per eight
/// bytes (per byte, when used through `UInt8.random`), which a send paid a few dozen times.
public enum SecureRandom {
    /// Fills `buffer` from the system CSPRNG in one call (`arc4random_buf`: glibc ≥ 2.36 reads
    /// `getrandom(2)` for the whole buffer, and never falls back to a weak source).
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        arc4random_buf(base, buffer.count)
    }

    /// `count` bytes from the system CSPRNG.
    public static func bytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// `count` values below `bound` (at most 256), uniform: bytes at or above the largest multiple of
    /// `bound` are drawn again, so no value is favoured (no modulo bias).
    public static func values(_ count: Int, below bound: Int) -> [Int] {
        precondition(bound > 0 && bound <= 256)
        let limit = 256 - 256 % bound
        var result: [Int] = []
        result.reserveCapacity(count)
        while result.count < count {
            // A little more than needed, so one draw nearly always suffices.
            for byte in bytes(count - result.count + 8) where Int(byte) < limit && result.count < count {
                result.append(Int(byte) % bound)
            }
        }
        return result
    }

    /// `count` random bytes as unpadded base64url text (opaque tokens, session ids).
    public static func base64URL(bytes count: Int) -> String {
        Data(bytes(count)).base64URLEncodedString()
    }

    /// `length` characters from `[A-Za-z0-9]`, without modulo bias (Firebase-shaped ids such as localId).
    public static func alphanumeric(_ length: Int) -> String {
        String(decoding: values(length, below: alphabet.count).map { alphabet[$0] }, as: UTF8.self)
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
}

extension Data {
    /// Unpadded base64url (RFC 4648 §5), as JWTs and opaque tokens use. Written directly from the
    /// bytes: base64 then three `replacingOccurrences` passes through NSString cost a send about 2 % of
    /// its CPU.
    public func base64URLEncodedString() -> String {
        let alphabet = Base64URL.alphabet
        var out: [UInt8] = []
        out.reserveCapacity((count * 4 + 2) / 3)
        withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var index = 0
            while index + 3 <= bytes.count {
                let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                out.append(alphabet[Int(chunk >> 18)])
                out.append(alphabet[Int(chunk >> 12 & 0x3F)])
                out.append(alphabet[Int(chunk >> 6 & 0x3F)])
                out.append(alphabet[Int(chunk & 0x3F)])
                index += 3
            }
            let rest = bytes.count - index
            if rest > 0 {
                let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
                out.append(alphabet[Int(chunk >> 18)])
                out.append(alphabet[Int(chunk >> 12 & 0x3F)])
                if rest == 2 { out.append(alphabet[Int(chunk >> 6 & 0x3F)]) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url with or without padding; nil when the text is not base64url (a character
    /// outside the alphabet, padding in the middle, or a length no encoding produces). Leftover bits
    /// are ignored, as Foundation's decoder ignores them.
    public init?(base64URLEncoded text: String) {
        var utf8 = Array(text.utf8)
        while utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        guard utf8.count % 4 != 1 else { return nil }
        var out = Data(capacity: utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in utf8 {
            let value = Base64URL.values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        self = out
    }
}

/// The base64url alphabet and its inverse; standard base64's `+` and `/` are accepted when decoding,
/// as `Data(base64Encoded:)` after translation accepted them before.
enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()
}
