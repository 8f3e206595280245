import Foundation

/// A text with `{{name}}` placeholders (SMS texts, gateway request bodies).
///
/// Parsed once at start-up so a typo in configuration is refused before any job is taken, and rendered
/// with an escaping rule chosen by where the text goes (JSON string, form field, plain text).
public struct Template: Sendable, Equatable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case placeholder(String)
    }

    /// How values are escaped as they are inserted.
    public enum Escaping: Sendable {
        /// Inserted as-is (SMS text).
        case none
        /// Escaped for the inside of a JSON string literal (the template supplies the quotes).
        case jsonString
        /// Percent-encoded for `application/x-www-form-urlencoded`.
        case formURLEncoded
        /// HTML text and attribute values (`&`, `<`, `>`, `"`, `'`): the email's HTML part.
        case html
    }

    /// Why a template text was refused.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var problem: String
        public var description: String { problem }
    }

    let segments: [Segment]

    /// The placeholder names the text uses.
    public var placeholders: Set<String> {
        Set(segments.compactMap { if case .placeholder(let name) = $0 { name } else { nil } })
    }

    /// Parses `text`, allowing only placeholders from `allowed`.
    public init(_ text: String, allowed: Set<String>) throws(ParseError) {
        var segments: [Segment] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { segments.append(.literal(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw ParseError(problem: "unclosed '{{'")
            }
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            guard allowed.contains(name) else {
                throw ParseError(problem: "unknown placeholder '{{\(name)}}' (known: \(allowed.sorted().joined(separator: ", ")))")
            }
            segments.append(.placeholder(name))
            rest = rest[close.upperBound...]
        }
        if rest.isEmpty == false { segments.append(.literal(String(rest))) }
        self.segments = segments
    }

    /// The text with each placeholder replaced by its (escaped) value; missing values render empty.
    public func render(_ values: [String: String], escaping: Escaping = .none) -> String {
        var out = ""
        for segment in segments {
            switch segment {
            case .literal(let text): out += text
            case .placeholder(let name): out += Self.escape(values[name] ?? "", escaping)
            }
        }
        return out
    }

    public static func escape(_ value: String, _ escaping: Escaping) -> String {
        switch escaping {
        case .none:
            return value
        case .jsonString:
            // Most values (numbers, codes, plain text) need no escape; checked eight bytes at a time (byte
            // by byte through the UTF-8 view, about 1,100 instructions per SMS text).
            var text = value
            if text.withUTF8({ JSONWriter.needsEscape($0) }) == false { return value }
            var out = ""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out
        case .formURLEncoded:
            // RFC 3986's unreserved characters stay, every other UTF-8 byte becomes %XX (upper case), as
            // `addingPercentEncoding` does with that set; by bytes, without building a CharacterSet
            // (Foundation, on every call) for each value of each SMS.
            var out: [UInt8] = []
            out.reserveCapacity(value.utf8.count)
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    out.append(byte)
                default:
                    out.append(UInt8(ascii: "%"))
                    out.append(HexDigits.uppercase[Int(byte >> 4)])
                    out.append(HexDigits.uppercase[Int(byte & 0x0F)])
                }
            }
            return String(decoding: out, as: UTF8.self)
        case .html:
            return escapeHTML(value)
        }
    }

    /// `&`, `<`, `>`, `"` and `'` as character references, matched on UTF-8 bytes. Never on Swift
    /// `Character`s: those are grapheme clusters, so `"\u{0600}<"` (a prepend scalar) or `">\u{0301}"` (a
    /// combining mark) is one Character equal to none of the five, yet a browser still reads its `<` or `>`.
    /// The five are ASCII, and no byte of a multi-byte UTF-8 sequence is below 0x80, so bytes are exact.
    public static func escapeHTML(_ value: String) -> String {
        func isSpecial(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "&") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "\"")
                || byte == UInt8(ascii: "'")
        }
        if value.utf8.contains(where: isSpecial) == false { return value }
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 16)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): out.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\""): out.append(contentsOf: "&quot;".utf8)
            case UInt8(ascii: "'"): out.append(contentsOf: "&#39;".utf8)
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
