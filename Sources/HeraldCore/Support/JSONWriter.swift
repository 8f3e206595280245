import Foundation

/// Writes small JSON values (objects with sorted keys), straight into bytes: job bodies are small objects of
/// strings and string maps, and Foundation's `JSONEncoder` (a container tree, a key sort and a
/// `Data` copy per call) was about 3 % of a send's CPU.
///
/// Escaping follows RFC 8259: `"` and `\` escaped, control characters as `\u00XX` (short forms for
/// the common ones), everything else written as UTF-8, `/` included.
///
/// The bytes live in the writer's own buffer, not an `[UInt8]`: every append to an array checked its
/// uniqueness and capacity through a call (about 90 instructions per `append(contentsOf:)`), which was
/// most of the writer's cost on a send. Noncopyable, so the buffer has exactly one owner and is freed
/// with it.
public struct JSONWriter: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    public private(set) var count = 0
    /// How many objects and lists `beginObject`/`beginList` opened and are still open.
    private var depth = 0
    /// Bit `d`: the object or list open at depth `d` has a member or element already (the next one
    /// needs a comma). 63 levels, far more than anything Herald writes.
    private var wrote: UInt64 = 0

    public init(capacity: Int = 512) {
        self.capacity = max(capacity, 16)
        start = .allocate(capacity: self.capacity)
    }

    deinit { start.deallocate() }

    /// The bytes written, read in place.
    public func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: start, count: count))
    }

    /// A copy of the bytes written.
    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// A copy of the bytes written, as `Data`.
    public var data: Data { Data(bytes: start, count: count) }

    /// The text written (always valid UTF-8: strings come in as `String`s and keys as ASCII).
    public var text: String { withBytes { String(decoding: $0, as: UTF8.self) } }

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
    /// list of them: `beginObject`, then `member` for each, then `endObject`. Objects and lists opened
    /// this way nest.
    public mutating func beginObject() {
        byte(UInt8(ascii: "{"))
        open()
    }

    /// One member of the object `beginObject` opened; a nil value is left out.
    ///
    /// The key is a literal written as it is, without the escape scan a text gets: member-by-member
    /// callers name their members in code, and keys that need escaping have no place there.
    public mutating func member(_ key: StaticString, _ value: Value?) {
        guard let value else { return }
        beginMember(key)
        self.value(value)
    }

    /// The key of a member whose value the caller writes next, with `beginList` or `beginObject`.
    public mutating func beginMember(_ key: StaticString) {
        writeKey(key, after: markWritten())
    }

    public mutating func endObject() {
        byte(UInt8(ascii: "}"))
        close()
    }

    /// A list written element by element: `beginList`, then `element()` before each element
    /// (`beginObject` … `endObject`, `beginList` … `endList`) or `element(value)` for a plain one, then
    /// `endList`.
    public mutating func beginList() {
        byte(UInt8(ascii: "["))
        open()
    }

    /// Starts the next element of the list open (a comma after the first).
    public mutating func element() {
        if markWritten() { byte(UInt8(ascii: ",")) }
    }

    /// The next element of the list open: `value`.
    public mutating func element(_ value: Value) {
        element()
        self.value(value)
    }

    public mutating func endList() {
        byte(UInt8(ascii: "]"))
        close()
    }

    private mutating func open() {
        depth += 1
        precondition(depth < 64, "JSONWriter nests 63 levels at most")
        wrote &= ~(1 << UInt64(depth))
    }

    private mutating func close() {
        precondition(depth > 0, "JSONWriter: an end without its begin")
        depth -= 1
    }

    /// Marks the open object or list as having an item; returns whether it had one before (a comma is due).
    private mutating func markWritten() -> Bool {
        let bit: UInt64 = 1 << UInt64(depth)
        defer { wrote |= bit }
        return wrote & bit != 0
    }

    /// Objects nested in values keep their own comma state here, apart from `beginObject`'s.
    private mutating func writeObject(_ fields: [(key: String, value: Value?)]) {
        byte(UInt8(ascii: "{"))
        var wroteField = false
        for field in fields {
            guard let value = field.value else { continue }
            writeKey(text: field.key, after: wroteField)
            wroteField = true
            self.value(value)
        }
        byte(UInt8(ascii: "}"))
    }

    /// `,"key":` for a key that is a text (escaped as any text is), the comma when a member came before it.
    private mutating func writeKey(text key: String, after wrote: Bool) {
        if wrote { byte(UInt8(ascii: ",")) }
        string(key)
        byte(UInt8(ascii: ":"))
    }

    /// `,"key":` (the comma when a member came before it) in one reservation.
    private mutating func writeKey(_ key: StaticString, after wrote: Bool) {
        let length = key.utf8CodeUnitCount
        assert(key.withUTF8Buffer { Self.needsEscape($0) } == false, "a member's key needs no escape")
        reserve(length + 4)
        if wrote { store(UInt8(ascii: ",")) }
        store(UInt8(ascii: "\""))
        (start + count).update(from: key.utf8Start, count: length)
        count += length
        store(UInt8(ascii: "\""))
        store(UInt8(ascii: ":"))
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

    mutating func value(_ value: Value) {
        switch value {
        case .string(let text): string(text)
        case .strings(let map):
            // Sorted as they are, not as a list of `Value`s first (a job's params, on every send).
            byte(UInt8(ascii: "{"))
            for (index, member) in map.sorted(by: { $0.key < $1.key }).enumerated() {
                writeKey(text: member.key, after: index > 0)
                string(member.value)
            }
            byte(UInt8(ascii: "}"))
        case .integer(let number): integer(number)
        case .real(let number):
            if number.isFinite {
                for byte in number.description.utf8 { self.byte(byte) }
            } else {
                literal("null")
            }
        case .array(let values):
            byte(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { byte(UInt8(ascii: ",")) }
                self.value(element)
            }
            byte(UInt8(ascii: "]"))
        }
    }

    /// Decimal digits, written in place (no String made per number).
    mutating func integer(_ number: Int64) {
        reserve(20)  // a sign and at most 19 digits (Int64.min's magnitude has 19)
        if number < 0 { store(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var digits = 1
        var scale: UInt64 = 10
        while digits < 19, magnitude >= scale {
            digits += 1
            scale = scale &* 10
        }
        var index = count + digits
        count = index
        repeat {
            index -= 1
            start[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
    }

    /// True when `utf8` holds a byte JSON must escape: a control character, `"` or `\` (found eight at
    /// a time: byte by byte, this scan was 3 % of herald-api's instructions per send on PostgreSQL, whose
    /// group commit hands its batches over as JSON).
    static func needsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        JSONSpecialBytes.first(in: UnsafeRawBufferPointer(utf8), from: 0) < utf8.count
    }

    mutating func string(_ text: String) {
        // Most texts need no escape: checked and copied whole from their UTF-8 storage (small and
        // native strings have it; anything else is escaped byte by byte below).
        let copied =
            text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
                guard Self.needsEscape(utf8) == false else { return false }
                reserve(utf8.count + 2)
                store(UInt8(ascii: "\""))
                if let base = utf8.baseAddress { (start + count).update(from: base, count: utf8.count) }
                count += utf8.count
                store(UInt8(ascii: "\""))
                return true
            } ?? false
        if copied { return }
        byte(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): literal("\\\"")
            case UInt8(ascii: "\\"): literal("\\\\")
            case 0x0A: literal("\\n")
            case 0x0D: literal("\\r")
            case 0x09: literal("\\t")
            case 0..<0x20:
                literal("\\u00")
                self.byte(HexDigits.lowercase[Int(byte >> 4)])
                self.byte(HexDigits.lowercase[Int(byte & 0x0F)])
            default: self.byte(byte)
            }
        }
        self.byte(UInt8(ascii: "\""))
    }

    /// Text written as it is (no quotes, no escapes): `null` and escape sequences.
    private mutating func literal(_ text: StaticString) {
        reserve(text.utf8CodeUnitCount)
        (start + count).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        count += text.utf8CodeUnitCount
    }

    @inline(__always)
    private mutating func byte(_ byte: UInt8) {
        reserve(1)
        store(byte)
    }

    /// Writes one byte into room `reserve` made.
    @inline(__always)
    private mutating func store(_ byte: UInt8) {
        start[count] = byte
        count += 1
    }

    /// Room for `extra` more bytes: the buffer doubles (at least) when it runs out.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private mutating func grow(to needed: Int) {
        let larger = max(needed, capacity * 2)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.moveInitialize(from: start, count: count)
        start.deallocate()
        start = moved
        capacity = larger
    }
}
