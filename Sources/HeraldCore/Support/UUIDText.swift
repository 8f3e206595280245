import Foundation

extension UUID {
    /// The canonical lowercase form (`8-4-4-4-12` hex digits), as jobs, ledger rows and log lines carry
    /// it. Foundation's `uuidString` formats through `snprintf` and upper case, and a send needed the id
    /// as text five times: that `snprintf` was about 2 % of herald-api's CPU per send.
    ///
    /// The digits of each four bytes are made in one 64-bit word (`HexDigits.digits(of:)`), then placed
    /// around the dashes: a byte at a time with a dash test each, an id took about 490 instructions,
    /// six ids per send.
    public var lowercasedText: String {
        String(unsafeUninitializedCapacity: 36) { out in
            writeLowercasedText(to: UnsafeMutableRawPointer(out.baseAddress!))
            return 36
        }
    }

    /// Writes the 36 bytes of `lowercasedText` at `text` (for texts the id is part of).
    func writeLowercasedText(to text: UnsafeMutableRawPointer) {
        withUnsafeBytes(of: uuid) { bytes in
            func digits(_ word: Int) -> UInt64 {
                HexDigits.digits(of: bytes.loadUnaligned(fromByteOffset: 4 * word, as: UInt32.self))
            }
            func store(_ digits: UInt32, at offset: Int) {
                text.storeBytes(of: digits.littleEndian, toByteOffset: offset, as: UInt32.self)
            }
            // 8-4-4-4-12: the first word's eight digits, the second's and third's split by a dash,
            // the fourth's eight.
            let (second, third) = (digits(1), digits(2))
            text.storeBytes(of: digits(0).littleEndian, toByteOffset: 0, as: UInt64.self)
            store(UInt32(truncatingIfNeeded: second), at: 9)
            store(UInt32(truncatingIfNeeded: second >> 32), at: 14)
            store(UInt32(truncatingIfNeeded: third), at: 19)
            store(UInt32(truncatingIfNeeded: third >> 32), at: 24)
            text.storeBytes(of: digits(3).littleEndian, toByteOffset: 28, as: UInt64.self)
            for dash in [8, 13, 18, 23] { text.storeBytes(of: UInt8(ascii: "-"), toByteOffset: dash, as: UInt8.self) }
        }
    }

    /// The `8-4-4-4-12` form of hex digits in either case, read by bytes; what Herald reads every id
    /// with. Foundation's `UUID(uuidString:)` on Linux reads each byte through `sscanf` (about 0.7 % of
    /// herald-sms-worker's CPU per job, which reads every job's id back), and so also takes a space, '+'
    /// or '-' where a digit belongs; this refuses those, and gives Foundation's UUID for everything else
    /// (tests compare the two).
    public init?(parsing text: String) {
        var text = text
        let parsed: uuid_t? = text.withUTF8 { bytes in
            guard bytes.count == 36 else { return nil }
            var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let complete = withUnsafeMutableBytes(of: &value) { out -> Bool in
                var position = 0
                for index in 0..<16 {
                    if UUID.dashPrecedes(index) {
                        guard bytes[position] == UInt8(ascii: "-") else { return false }
                        position += 1
                    }
                    guard let high = HexDigits.value(of: bytes[position]), let low = HexDigits.value(of: bytes[position + 1]) else {
                        return false
                    }
                    out[index] = high << 4 | low
                    position += 2
                }
                return true
            }
            return complete ? value : nil
        }
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    /// True for the bytes (4, 6, 8, 10) that a dash comes before in the text form.
    private static func dashPrecedes(_ byteIndex: Int) -> Bool {
        byteIndex == 4 || byteIndex == 6 || byteIndex == 8 || byteIndex == 10
    }
}

/// Hexadecimal digits: written straight into a string's buffer (ids, digests, MACs), and read back.
enum HexDigits {
    static let lowercase: [UInt8] = Array("0123456789abcdef".utf8)
    /// Percent-encoding's digits (RFC 3986 recommends upper case).
    static let uppercase: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Writes `byte`'s two digits at `position` and moves it past them. Computed rather than looked up in
    /// `lowercase`: the array's bounds checks and global access were most of an id's formatting (six
    /// ids and digests per send; `herald-bench instructions`).
    @inline(__always)
    static func write(_ byte: UInt8, into out: UnsafeMutableBufferPointer<UInt8>, at position: inout Int) {
        out[position] = digit(byte >> 4)
        out[position + 1] = digit(byte & 0x0F)
        position += 2
    }

    /// The lowercase digit of a nibble (0–15).
    @inline(__always)
    static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &- 10 &+ nibble
    }

    /// The eight lowercase digits of four bytes as they lie in memory (`raw`, loaded unaligned from them),
    /// in one word whose bytes, stored little-endian, are the digits in order.
    ///
    /// The bytes are spread one per 16-bit lane, each byte's high nibble moved into the lane's low byte
    /// and its low nibble into the high byte; then `0` is added to every digit, and `a` − `0` − 10 more to
    /// those of 10 and above (a nibble plus 6 carries into bit 4 exactly then, and never past its byte).
    @inline(__always)
    static func digits(of raw: UInt32) -> UInt64 {
        var spread = UInt64(UInt32(littleEndian: raw))
        spread = (spread | spread << 16) & 0x0000_FFFF_0000_FFFF
        spread = (spread | spread << 8) & 0x00FF_00FF_00FF_00FF
        let nibbles = (spread >> 4) & 0x000F_000F_000F_000F | (spread & 0x000F_000F_000F_000F) << 8
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
    }

    /// Writes the digits of `bytes` at `position` and moves it past them: four bytes at a time
    /// (`digits(of:)`), the rest one by one.
    @inline(__always)
    static func write(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>, at position: inout Int) {
        precondition(position + 2 * bytes.count <= out.count)
        var index = 0
        while index + 4 <= bytes.count, let text = UnsafeMutableRawPointer(out.baseAddress) {
            let word = digits(of: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self))
            text.storeBytes(of: word.littleEndian, toByteOffset: position, as: UInt64.self)
            position += 8
            index += 4
        }
        while index < bytes.count {
            write(bytes[index], into: out, at: &position)
            index += 1
        }
    }

    /// The value of one hex digit, either case; nil for any other byte.
    static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
