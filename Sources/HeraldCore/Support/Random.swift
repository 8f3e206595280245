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
    /// Unpadded base64url (RFC 4648 §5), as JWTs and opaque tokens use.
    public func base64URLEncodedString() -> String {
        base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url with or without padding; nil when the text is not base64url.
    public init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if base64.contains("=") == false {
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        }
        self.init(base64Encoded: base64)
    }
}
