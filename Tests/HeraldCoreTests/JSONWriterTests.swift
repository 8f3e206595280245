import Foundation
import Testing

@testable import HeraldCore

@Suite("JSONWriter: what it writes, and that JSON readers read it back")
struct JSONWriterTests {
    func written(_ build: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        build(&writer)
        return writer.text
    }

    @Test("keys sorted, nil fields left out, escapes by RFC 8259, numbers in full")
    func exact() {
        let text = written {
            $0.object([
                ("z", .integer(Int64.min)), ("a", .string("say \"hi\"\\\n\r\t\u{01}/é😀")), ("m", nil), ("b", .integer(0)),
                ("c", .array([.integer(-42), .integer(Int64.max), .real(0.1), .strings(["y": "2", "x": "1"])])),
                ("d", .strings(["k": ""])),
            ])
        }
        #expect(
            text
                == #"{"a":"say \"hi\"\\\n\r\t\u0001/é😀","b":0,"c":[-42,9223372036854775807,0.1,{"x":"1","y":"2"}],"d":{"k":""},"z":-9223372036854775808}"#
        )
    }

    @Test("integers at every digit count: each power of ten, one below it, and their negatives, as Swift prints them")
    func integerDigits() {
        var numbers: [Int64] = [0, 1, -1, 9, Int64.max, Int64.min, Int64.min + 1]
        var power: Int64 = 10
        for _ in 1...18 {
            numbers += [power, power - 1, power + 1, -power, -(power - 1)]
            power = power &* 10
        }
        for number in numbers {
            // After a member, so a digit written short or long would also show in its neighbours.
            let text = written { $0.object([("a", .string("x")), ("n", .integer(number)), ("z", .string("y"))]) }
            #expect(text == #"{"a":"x","n":\#(number),"z":"y"}"#)
        }
    }

    @Test("a writer that starts small grows past its buffer, through every kind of write, and keeps what it wrote")
    func growth() throws {
        var writer = JSONWriter(capacity: 1)
        let long = String(repeating: "é\"a", count: 3_000)
        let numbers = (0..<500).map { Int64($0) * 1_000_003 - 250_000_000 }
        writer.object([
            ("long", .string(long)), ("numbers", .array(numbers.map { .integer($0) })), ("plain", .string(String(repeating: "b", count: 5_000))),
        ])
        let object = try #require(try JSONSerialization.jsonObject(with: writer.data) as? [String: Any])
        #expect(object["long"] as? String == long)
        #expect((object["numbers"] as? [NSNumber])?.map(\.int64Value) == numbers)
        #expect(object["plain"] as? String == String(repeating: "b", count: 5_000))
        #expect(writer.count == writer.bytes.count && writer.text.utf8.count == writer.count)
    }

    @Test("member by member: commas only between written members and elements, nil members left out, empty list and object")
    func memberByMember() {
        let text = written { writer in
            writer.beginList()
            for values: [JSONWriter.Value?] in [[nil, .integer(1), nil, .string("x")], [nil, nil], [.array([]), nil]] {
                writer.element()
                writer.beginObject()
                let keys: [StaticString] = ["k0", "k1", "k2", "k3"]
                for (key, value) in zip(keys, values) { writer.member(key, value) }
                writer.endObject()
            }
            writer.endList()
        }
        #expect(text == #"[{"k1":1,"k3":"x"},{},{"k0":[]}]"#)
        let empty = written { writer in
            writer.beginList()
            writer.endList()
        }
        #expect(empty == "[]")
    }

    @Test("objects and lists opened member by member nest, each with its own commas")
    func nested() throws {
        let text = written { writer in
            writer.beginList()
            for rows in [[("a", 1), ("b", -2)], [], [("c", 3)]] {
                writer.element()
                writer.beginObject()
                writer.member("first", .string("x"))
                writer.beginMember("rows")
                writer.beginList()
                for (name, number) in rows {
                    writer.element()
                    writer.beginList()
                    writer.element(.string(name))
                    writer.element(.integer(Int64(number)))
                    writer.endList()
                }
                writer.endList()
                writer.beginMember("tail")
                writer.beginObject()
                writer.member("k", nil)
                writer.endObject()
                writer.member("z", .integer(0))
                writer.endObject()
            }
            writer.endList()
        }
        #expect(
            text
                == #"[{"first":"x","rows":[["a",1],["b",-2]],"tail":{},"z":0},{"first":"x","rows":[],"tail":{},"z":0},{"first":"x","rows":[["c",3]],"tail":{},"z":0}]"#
        )
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [Any])
    }

    @Test("fields in key order are written as given, out of order they are sorted first: the same bytes either way")
    func orderedAndShuffled() {
        var random = Xorshift(state: 0x0D_DE_12)
        let keys = ["a", "aB", "ab", "b", "blockUs", "codeHash", "codeSealed", "id", "idempotencyKey", "z"]
        let fields: [(key: String, value: JSONWriter.Value?)] = keys.map { ($0, .string("v-" + $0)) }
        let ordered = written { $0.object(fields) }
        #expect(ordered.hasPrefix(#"{"a":"v-a","aB":"v-aB","ab":"v-ab","b":"#))
        for _ in 0..<50 {
            var shuffled = fields
            shuffled.shuffle(using: &random)
            #expect(written { $0.object(shuffled) } == ordered)
        }
    }

    @Test("random texts and numbers read back as written")
    func roundTrip() throws {
        var random = Xorshift(state: 0x15_0_0_0_5EED)
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{00}", "\u{1F}", "\u{7F}", "é", "я", "€", "😀"]
        for _ in 0..<2_000 {
            let scalars = (0..<Int.random(in: 0...24, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            let text = String(String.UnicodeScalarView(scalars))
            let number = Int64(bitPattern: random.next()) >> Int.random(in: 0...63, using: &random)
            let bytes = Data(written { $0.object([("text", .string(text)), ("number", .integer(number)), ("list", .array([.string(text)]))]) }.utf8)
            let object = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
            #expect(object["text"] as? String == text)
            #expect((object["number"] as? NSNumber)?.int64Value == number)
            #expect((object["list"] as? [String]) == [text])
        }
    }

    @Test("the word-at-a-time escape scan agrees with a byte-by-byte one: every length to 24, every position, every byte")
    func escapeScan() {
        func naive(_ bytes: [UInt8]) -> Bool { bytes.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") } }
        // Fillers around the byte under test: plain ASCII, and bytes of multi-byte UTF-8 (0x80 and above).
        for filler: UInt8 in [UInt8(ascii: "a"), 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xFF] {
            for length in 0...24 {
                let plain = [UInt8](repeating: filler, count: length)
                #expect(plain.withUnsafeBufferPointer(JSONWriter.needsEscape) == naive(plain))
                for position in 0..<length {
                    for byte in UInt8.min...UInt8.max {
                        var bytes = plain
                        bytes[position] = byte
                        let scanned = bytes.withUnsafeBufferPointer(JSONWriter.needsEscape)
                        if scanned != naive(bytes) {
                            Issue.record("filler \(filler), length \(length), byte \(byte) at \(position): scan says \(scanned)")
                            return
                        }
                    }
                }
            }
        }
    }

    @Test("the first quote, backslash or control byte is found where a byte-by-byte search finds it, from any start")
    func firstSpecialByte() {
        func naive(_ bytes: [UInt8], from start: Int) -> Int {
            bytes[start...].firstIndex { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") } ?? bytes.count
        }
        for filler: UInt8 in [UInt8(ascii: "a"), 0x21, 0x5D, 0x80, 0xFF] {
            for length in 0...20 {
                for start in 0...min(length, 3) {
                    for position in start..<max(start, length) {
                        for byte: UInt8 in [0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xDC, 0xFF] {
                            var bytes = [UInt8](repeating: filler, count: length)
                            bytes[position] = byte
                            // A second special byte later must not move the answer.
                            if position + 3 < length { bytes[position + 3] = UInt8(ascii: "\"") }
                            let found = bytes.withUnsafeBytes { JSONSpecialBytes.first(in: $0, from: start) }
                            if found != naive(bytes, from: start) {
                                Issue.record("filler \(filler), length \(length), start \(start), byte \(byte) at \(position): found \(found)")
                                return
                            }
                        }
                    }
                }
            }
        }
    }
}
