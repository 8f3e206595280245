import Foundation

extension UUID {
    /// The canonical lowercase form (`8-4-4-4-12` hex digits), as jobs, ledger rows and log lines carry
    /// it. Foundation's `uuidString` formats through `snprintf` and upper case, and a send needed the id
    /// as text five times: that `snprintf` was about 2 % of herald-api's CPU per send.
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var position = 0
                for index in 0..<16 {
                    if UUID.dashPrecedes(index) {
                        out[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    HexDigits.write(bytes[index], into: out, at: &position)
                }
                return position
            }
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
    /// ids and digests per send; `herald-bench --suite instructions`).
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
