import Foundation
import HeraldCore
import NIOCore

/// A request body the way Identity Toolkit reads it: a JSON object (or, for securetoken, a form)
/// whose keys may be camelCase or snake_case and whose scalars may be strings or numbers.
/// Unknown keys are ignored, as the real service does.
struct WireBody {
    /// The largest body read (64 KiB; Identity Toolkit requests are a few hundred bytes).
    static let maximumSize = 64 * 1024

    private let fields: [String: Any]
    /// Whether any name has an underscore: only then can a name be present in snake case. Most bodies
    /// have none, and a send asks for two absent names, whose snake case was made and looked up each time.
    private let hasUnderscoredNames: Bool

    init(fields: [String: Any]) {
        self.fields = fields
        self.hasUnderscoredNames = fields.keys.contains { $0.utf8.contains(UInt8(ascii: "_")) }
    }

    /// Parses `buffer` as JSON, or as `application/x-www-form-urlencoded` when the content type says so
    /// and the body is not a JSON object (curl's `-d` labels JSON as a form).
    ///
    /// A body of strings, objects of strings and nulls (a send's, a sign-in's) is read by
    /// `JSONObjectReader` straight from the bytes; anything else, or anything it refuses, goes to
    /// `JSONSerialization`, which decides what is invalid. The reader accepts only what
    /// `JSONSerialization` reads the same way, minus duplicate names, which it leaves to it.
    static func parse(_ buffer: ByteBuffer, contentType: String?) throws(HeraldError) -> WireBody {
        let bytes = Array(buffer.readableBytesView)
        let looksLikeJSON = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{")
        if let contentType, looksLikeJSON == false, Self.hasPrefixIgnoringASCIICase(contentType, "application/x-www-form-urlencoded") {
            return WireBody(fields: FormEncoding.decode(String(decoding: bytes, as: UTF8.self)))
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return WireBody(fields: [:]) }
        if looksLikeJSON, let members = JSONObjectReader.read(bytes) {
            return WireBody(
                fields: members.mapValues { value -> Any in
                    switch value {
                    case .string(let text): text
                    case .strings(let texts): texts.mapValues { $0 as Any }
                    case .null: NSNull()
                    }
                })
        }
        return try parseWithFoundation(bytes)
    }

    /// True when `text` starts with `prefix` (lower-case ASCII) in any letter case, without lower-casing a
    /// copy of it (the content type is read on every request).
    static func hasPrefixIgnoringASCIICase(_ text: String, _ prefix: StaticString) -> Bool {
        let wanted = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        var bytes = text.utf8.makeIterator()
        for expected in wanted {
            guard let byte = bytes.next() else { return false }
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            guard lower == expected else { return false }
        }
        return true
    }

    /// Any JSON object, by `JSONSerialization`; anything else is `INVALID_JSON`.
    static func parseWithFoundation(_ bytes: [UInt8]) throws(HeraldError) -> WireBody {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)), let fields = object as? [String: Any] else {
            throw HeraldError(.invalidJSON)
        }
        return WireBody(fields: fields)
    }

    private func raw(_ name: String) -> Any? {
        if let value = fields[name] { return value }
        // A name without capitals is its own snake case.
        guard hasUnderscoredNames, name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return nil }
        return fields[Self.snakeCase(name)]
    }

    /// A string field; numbers are accepted as their text, empty strings and nulls read as absent.
    func string(_ name: String) -> String? {
        switch raw(name) {
        case let text as String: return text.isEmpty ? nil : text
        case let integer as Int: return String(integer)
        case let number as Double: return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        default: return nil
        }
    }

    /// A boolean field (`true`/`false` or their text).
    func bool(_ name: String) -> Bool? {
        switch raw(name) {
        case let flag as Bool: return flag
        case let text as String: return text == "true" ? true : text == "false" ? false : nil
        default: return nil
        }
    }

    /// A list of strings (`["a","b"]`), or one string as a one-element list.
    func strings(_ name: String) -> [String] {
        switch raw(name) {
        case let list as [Any]: return list.compactMap { $0 as? String }.filter { $0.isEmpty == false }
        case let text as String: return text.isEmpty ? [] : [text]
        default: return []
        }
    }

    /// A nested object (`phoneEnrollmentInfo`), nil when absent or not an object.
    func object(_ name: String) -> WireBody? {
        (raw(name) as? [String: Any]).map(WireBody.init(fields:))
    }

    /// A JSON object sent as its text (as firebase-admin sends `customAttributes`) or as an object.
    func jsonText(_ name: String) -> String? {
        switch raw(name) {
        case let text as String: return text
        case let object as [String: Any]: return (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) }
        default: return nil
        }
    }

    /// True when the field is present at all (even empty).
    func contains(_ name: String) -> Bool { raw(name) != nil }

    /// A client's value made safe to quote in an error message: letters, digits and `_`, at most 40.
    static func echoable(_ text: String) -> String {
        String(text.prefix(40).filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
    }

    /// `phoneNumber` → `phone_number`. Field names are Herald's own ASCII literals, and every absent
    /// field a handler asks about is looked up under this name too, so it works on bytes (Character's
    /// Unicode properties were a visible share of a send).
    static func snakeCase(_ name: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(name.utf8.count + 4)
        for byte in name.utf8 {
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") {
                out.append(UInt8(ascii: "_"))
                out.append(byte + 32)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
