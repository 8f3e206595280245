/// Where a JSON string's plain run ends: the first `"`, `\` or control character (below 0x20), found
/// eight bytes at a time. Job bodies and the PostgreSQL batches are mostly long plain texts (sealed
/// codes, ids, limit keys), and a byte-by-byte scan was the largest part of writing and reading them
/// (`herald-bench instructions`).
enum JSONSpecialBytes {
    /// The index of the first such byte at or after `start`, or `bytes.count` when there is none.
    ///
    /// A word holds one exactly when one of three borrow tests sets a high bit: `word - 0x20…` for a
    /// byte below 0x20, and `x - 0x01…` for a zero byte of `x = word ^ 0x22…` (a quote) or
    /// `word ^ 0x5C…` (a backslash), each masked by `~word` or `~x`. Bytes of 0x80 and above never set
    /// one, so other UTF-8 passes; a borrow only spreads upwards from a byte that set one itself.
    static func first(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        var index = start
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let below = (word &- ones &* 0x20) & ~word
            let quotes = (quote &- ones) & ~quote
            let backslashes = (backslash &- ones) & ~backslash
            if (below | quotes | backslashes) & highBits != 0 { break }
            index += 8
        }
        while index < bytes.count {
            if isSpecial(bytes[index]) { return index }
            index += 1
        }
        return bytes.count
    }

    @inline(__always)
    static func isSpecial(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}
