import Crypto
import Foundation
import Synchronization

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
    /// Fills `buffer` from the system CSPRNG. Small requests are served from a 4 KiB pool refilled
    /// with one `arc4random_buf` (glibc ≥ 2.36: one `getrandom(2)`, never a weak fallback), because a
    /// send draws random bytes eight times and each draw was a system call. Bytes served are wiped
    /// from the pool, so no value is handed out twice or lingers after use.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        guard buffer.count <= 256 else { return arc4random_buf(base, buffer.count) }
        pool.withLock { pool in pool.take(into: buffer) }
    }

    private static let pool = Mutex(Pool())

    /// Unused random bytes; `used` marks how many of `bytes` were handed out (and zeroed).
    private struct Pool: ~Copyable {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096

        mutating func take(into buffer: UnsafeMutableRawBufferPointer) {
            if bytes.count - used < buffer.count {
                bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                used = 0
            }
            bytes.withUnsafeMutableBytes { pool in
                let source = UnsafeMutableRawBufferPointer(rebasing: pool[used..<used + buffer.count])
                buffer.copyMemory(from: UnsafeRawBufferPointer(source))
                source.initializeMemory(as: UInt8.self, repeating: 0)
            }
            used += buffer.count
        }
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

    /// A name for this process among all that share a broker or store: host, process id and six
    /// random characters (a restarted process with a reused pid is another instance). Ledger claims'
    /// owner, the housekeeping turn's holder.
    public static func instanceName() -> String {
        "\(ProcessInfo.processInfo.hostName):\(getpid()):\(alphanumeric(6))"
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// A version 7 UUID (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Job ids are
    /// the ledger's key: ids that grow with time land at the end of its index instead of on a random
    /// page, so a send writes one page fewer (SQLite and PostgreSQL alike).
    public static func uuidV7(at date: Date) -> UUID {
        var bytes = self.bytes(16)
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - UInt64(index)))) }
        bytes[6] = 0x70 | bytes[6] & 0x0F
        bytes[8] = 0x80 | bytes[8] & 0x3F
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

extension Data {
    /// Unpadded base64url (RFC 4648 §5), as JWTs and opaque tokens use. Written directly from the
    /// bytes: base64 then three `replacingOccurrences` passes through NSString cost a send about 2 % of
    /// its CPU.
    public func base64URLEncodedString() -> String {
        withUnsafeBytes { Base64URL.string($0) }
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
    /// Unpadded base64url of `bytes`, written straight into the string.
    static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        let full = bytes.count / 3
        let rest = bytes.count - full * 3
        let length = full * 4 + (rest == 0 ? 0 : rest + 1)
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: length) { out in
                var position = 0
                var index = 0
                while index + 3 <= bytes.count {
                    let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                    out[position] = alphabet[Int(chunk >> 18)]
                    out[position + 1] = alphabet[Int(chunk >> 12 & 0x3F)]
                    out[position + 2] = alphabet[Int(chunk >> 6 & 0x3F)]
                    out[position + 3] = alphabet[Int(chunk & 0x3F)]
                    position += 4
                    index += 3
                }
                if rest > 0 {
                    let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
                    out[position] = alphabet[Int(chunk >> 18)]
                    out[position + 1] = alphabet[Int(chunk >> 12 & 0x3F)]
                    position += 2
                    if rest == 2 {
                        out[position] = alphabet[Int(chunk >> 6 & 0x3F)]
                        position += 1
                    }
                }
                return position
            }
        }
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()
}
