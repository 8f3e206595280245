/// Writes small JSON values (objects with sorted keys), straight into bytes: job bodies are small objects of
/// strings and string maps, and Foundation's `JSONEncoder` (a container tree, a key sort and a
/// `Data` copy per call) was about 3 % of a send's CPU.
///
/// Escaping follows RFC 8259: `"` and `\` escaped, control characters as `\u00XX` (short forms for
/// the common ones), everything else written as UTF-8, `/` included.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Inside `beginObject`/`endObject`: whether a member was written (the next one needs a comma).
    private var wroteMember = false
    /// Inside `beginList`/`endList`: whether an element was written.
    private var wroteElement = false

    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    /// One object: `fields` in key order, nil values left out. Fields given in key order are written
    /// as they are (its callers sort theirs first); others are sorted on a copy. Hot paths with fixed
    /// members write them one by one instead (`beginObject`, `member`).
    public mutating func object(_ fields: [(key: String, value: Value?)]) {
        if fields.indices.dropFirst().allSatisfy({ fields[$0 - 1].key < fields[$0].key }) {
            writeObject(fields)
        } else {
            writeObject(fields.sorted(by: { $0.key < $1.key }))
        }
    }

    /// An object written member by member, for callers that have their members in key order without a
    /// list of them: `beginObject`, then `member` for each, then `endObject`. Not nested.
    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        wroteMember = false
    }

    /// One member of the object `beginObject` opened; a nil value is left out.
    public mutating func member(_ key: String, _ value: Value?) {
        var wrote = wroteMember
        member(key, value, after: &wrote)
        wroteMember = wrote
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
    }

    /// A list written element by element, for objects written member by member: `beginList`, then
    /// `element()` before each element (`beginObject` … `endObject`), then `endList`. Not nested.
    public mutating func beginList() {
        bytes.append(UInt8(ascii: "["))
        wroteElement = false
    }

    /// Starts the next element of `beginList`'s list (a comma after the first).
    public mutating func element() {
        if wroteElement { bytes.append(UInt8(ascii: ",")) }
        wroteElement = true
    }

    public mutating func endList() {
        bytes.append(UInt8(ascii: "]"))
    }

    /// Objects nested in values keep their own comma state here, apart from `beginObject`'s.
    private mutating func writeObject(_ fields: [(key: String, value: Value?)]) {
        bytes.append(UInt8(ascii: "{"))
        var wrote = false
        for field in fields { member(field.key, field.value, after: &wrote) }
        bytes.append(UInt8(ascii: "}"))
    }

    /// `key: value`, after a comma when a member came before it (`wrote`); a nil value is left out.
    private mutating func member(_ key: String, _ value: Value?, after wrote: inout Bool) {
        guard let value else { return }
        if wrote { bytes.append(UInt8(ascii: ",")) }
        wrote = true
        string(key)
        bytes.append(UInt8(ascii: ":"))
        self.value(value)
    }

    /// A value: text, a map of texts (an object, keys sorted), a whole or a real number, or a list of
    /// values. Not `indirect`: nesting goes through arrays, which are references already, and an
    /// indirect case boxed every value on the heap.
    public enum Value {
        case string(String)
        case strings([String: String])
        case integer(Int64)
        /// Written in Swift's shortest round-trip form (`0.1`, `3.0`, `1e-05`), which JSON readers parse back exactly.
        case real(Double)
        case array([Value])
    }

    /// One array of arrays (rows of values).
    public mutating func array(_ rows: [[Value]]) {
        value(.array(rows.map { .array($0) }))
    }

    /// One array of values.
    public mutating func list(_ values: [Value]) {
        value(.array(values))
    }

    mutating func value(_ value: Value) {
        switch value {
        case .string(let text): string(text)
        case .strings(let map): object(map.map { (key: $0.key, value: .string($0.value)) })
        case .integer(let number): integer(number)
        case .real(let number): bytes.append(contentsOf: (number.isFinite ? number.description : "null").utf8)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                self.value(element)
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }

    /// Decimal digits, written in place (no String made per number).
    mutating func integer(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var room: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64 has at most 20 digits
        withUnsafeMutableBytes(of: &room) { digits in
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: digits[index...])
        }
    }

    /// True when `utf8` holds a byte JSON must escape: a control character, `"` or `\` (found eight at
    /// a time: byte by byte, this scan was 3 % of herald-api's instructions per send on PostgreSQL, whose
    /// group commit hands its batches over as JSON).
    static func needsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        JSONSpecialBytes.first(in: UnsafeRawBufferPointer(utf8), from: 0) < utf8.count
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most texts need no escape: checked and copied whole from their UTF-8 storage.
        var text = text
        let copied = text.withUTF8 { utf8 -> Bool in
            guard Self.needsEscape(utf8) == false else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(HexDigits.lowercase[Int(byte >> 4)])
                bytes.append(HexDigits.lowercase[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
