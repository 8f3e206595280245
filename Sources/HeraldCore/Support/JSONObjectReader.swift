/// Reads one JSON object whose members are strings, objects of strings or null — the shape of a job
/// body — straight from bytes. Anything else (another value type, a duplicate name, malformed JSON)
/// is `nil`, and the caller falls back to Foundation's `JSONDecoder`, which stays the authority on
/// what is refused and why.
///
/// A worker decodes every job it takes; `JSONDecoder` (a container per level, a Codable init) was
/// about 8 % of herald-sms-worker's CPU per job.
public struct JSONObjectReader {
    /// A member's value: text, an object of texts, or null.
    public enum Value: Equatable, Sendable {
        case string(String)
        case strings([String: String])
        case null
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The members of the object in `bytes`; nil when it is not exactly one such object.
    public static func read(_ bytes: [UInt8]) -> [String: Value]? {
        var reader = JSONObjectReader(bytes)
        reader.skipSpace()
        guard let members = reader.object(nested: false) else { return nil }
        reader.skipSpace()
        guard reader.index == bytes.count else { return nil }
        var result = [String: Value](minimumCapacity: members.count)
        for (name, value) in members {
            guard result.updateValue(value, forKey: name) == nil else { return nil }
        }
        return result
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// `{ "name": value, … }`; inside an object (`nested`) only strings are allowed as values.
    private mutating func object(nested: Bool) -> [(String, Value)]? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var members: [(String, Value)] = []
        members.reserveCapacity(nested ? 4 : 16)
        skipSpace()
        if take(UInt8(ascii: "}")) { return members }
        while true {
            skipSpace()
            guard let name = string() else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                guard let text = string() else { return nil }
                members.append((name, .string(text)))
            case UInt8(ascii: "{") where nested == false:
                guard let inner = object(nested: true) else { return nil }
                var strings: [String: String] = [:]
                for (key, value) in inner {
                    guard case .string(let text) = value, strings.updateValue(text, forKey: key) == nil else { return nil }
                }
                members.append((name, .strings(strings)))
            case UInt8(ascii: "n") where nested == false:
                guard bytes[index...].starts(with: "null".utf8) else { return nil }
                index += 4
                members.append((name, .null))
            default:
                return nil
            }
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "}")) ? members : nil
        }
    }

    /// The text of valid UTF-8, nil for anything else. ASCII (ids, base64, numbers: most of a job) cannot
    /// be invalid and is taken as it is; `String(validating:)` alone, generic and not specialised here,
    /// was about a thousand instructions per member, 4 % of a worker's per job.
    static func text(_ utf8: UnsafeBufferPointer<UInt8>) -> String? {
        let raw = UnsafeRawBufferPointer(utf8)
        var index = 0
        var ascii: UInt64 = 0
        while index + 8 <= raw.count {
            ascii |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < raw.count {
            ascii |= UInt64(raw[index])
            index += 1
        }
        if ascii & 0x8080_8080_8080_8080 == 0 { return String(decoding: utf8, as: UTF8.self) }
        return String(validating: utf8, as: UTF8.self)
    }

    /// A string with its escapes resolved (RFC 8259: `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t` `\uXXXX`,
    /// surrogate pairs joined); nil for control characters, bad escapes, lone surrogates or bad UTF-8.
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        // Most texts have no escape: the text is made from its bytes where they lie (before, each byte
        // was appended to an array first), and the plain run is found eight bytes at a time.
        let start = index
        index = bytes.withUnsafeBytes { JSONSpecialBytes.first(in: $0, from: start) }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                let end = index
                index += 1
                return bytes.withUnsafeBufferPointer { Self.text(UnsafeBufferPointer(rebasing: $0[start..<end])) }
            case UInt8(ascii: "\\"): break
            default: return nil  // a control character
            }
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: String(Character(unicode)).utf8)
                default: return nil
                }
            case 0..<0x20: return nil
            default: out.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = HexDigits.value(of: byte) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }
}
