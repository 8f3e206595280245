import HeraldCore
import Testing

/// HTML escaping must hold for any text a client, a broker user or a provider can put in front of an
/// operator: the escaper works on bytes, so grapheme clusters that hide a `<`, `>` or quote change nothing.
@Suite("HTML escaping")
struct HTMLEscapingTests {
    static let page = try! Template(#"<p title="{{v}}">{{v}}</p><input value='{{v}}'>"#, allowed: ["v"])

    /// What a browser's tokenizer would see in `html`: each tag's name and its attributes, values
    /// decoded. Quoted values are read to their closing quote, as the HTML tokenizer does.
    static func tags(_ html: String) -> [(name: String, attributes: [String: String])] {
        let bytes = Array(html.utf8)
        var tags: [(String, [String: String])] = []
        var i = 0
        func isNameByte(_ byte: UInt8) -> Bool { byte > 0x20 && byte != UInt8(ascii: ">") && byte != UInt8(ascii: "=") && byte != UInt8(ascii: "/") }
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "<"), i + 1 < bytes.count,
                (bytes[i + 1] | 0x20) >= UInt8(ascii: "a") && (bytes[i + 1] | 0x20) <= UInt8(ascii: "z") || bytes[i + 1] == UInt8(ascii: "/")
            else {
                i += 1
                continue
            }
            i += 1
            var name: [UInt8] = []
            while i < bytes.count, isNameByte(bytes[i]) || bytes[i] == UInt8(ascii: "/") && name.isEmpty {
                name.append(bytes[i])
                i += 1
            }
            var attributes: [String: String] = [:]
            while i < bytes.count, bytes[i] != UInt8(ascii: ">") {
                if bytes[i] <= 0x20 || bytes[i] == UInt8(ascii: "/") {
                    i += 1
                    continue
                }
                var attribute: [UInt8] = []
                while i < bytes.count, isNameByte(bytes[i]) {
                    attribute.append(bytes[i])
                    i += 1
                }
                var value: [UInt8] = []
                if i < bytes.count, bytes[i] == UInt8(ascii: "=") {
                    i += 1
                    if i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") {
                        let quote = bytes[i]
                        i += 1
                        while i < bytes.count, bytes[i] != quote {
                            value.append(bytes[i])
                            i += 1
                        }
                        i += 1
                    } else {
                        while i < bytes.count, bytes[i] > 0x20, bytes[i] != UInt8(ascii: ">") {
                            value.append(bytes[i])
                            i += 1
                        }
                    }
                }
                if attribute.isEmpty { i += 1 } else { attributes[String(decoding: attribute, as: UTF8.self)] = decoded(value) }
            }
            i += 1
            tags.append((String(decoding: name, as: UTF8.self), attributes))
        }
        return tags
    }

    /// The five references the escaper writes, decoded on bytes (any other `&` stays as it is).
    static func decoded(_ bytes: [UInt8]) -> String {
        let references: [(String, UInt8)] = [
            ("&lt;", UInt8(ascii: "<")), ("&gt;", UInt8(ascii: ">")), ("&quot;", UInt8(ascii: "\"")), ("&#39;", UInt8(ascii: "'")),
            ("&amp;", UInt8(ascii: "&")),
        ]
        var out: [UInt8] = []
        var i = 0
        outer: while i < bytes.count {
            if bytes[i] == UInt8(ascii: "&") {
                for (reference, byte) in references where bytes[i...].starts(with: reference.utf8) {
                    out.append(byte)
                    i += reference.utf8.count
                    continue outer
                }
            }
            out.append(bytes[i])
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func check(_ value: String) {
        let html = page.render(["v": value], escaping: .html)
        let found = tags(html)
        #expect(found.map(\.name) == ["p", "/p", "input"], "\(value.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(found.first?.attributes == ["title": value])
        #expect(found.last?.attributes == ["value": value])
        for special in ["<", ">", "\"", "'"] {
            #expect(Template.escape(value, .html).utf8.contains(special.utf8.first!) == false)
        }
    }

    @Test(
        "a prepend scalar before <, a combining mark after > or a quote, and the plain five are all escaped",
        arguments: [
            "\u{0600}<meta http-equiv=refresh content=0;url=https://phish.example/>\u{0301}",
            "\"\u{0338} autofocus x=\"", ">\u{0301}", "'\u{0301} onfocus='", "\u{0600}<form action=/admin/blocks/lift>\u{0301}",
            "<script>alert(\"x\")</script>", "a & b", "\u{200D}<b\u{200D}>\u{200D}", "\u{202E}<i>\u{202C}",
        ])
    func graphemeCases(_ value: String) {
        Self.check(value)
    }

    @Test("random text of markup, combining marks, prepend scalars, bidi controls and ZWJ sequences parses back to the page's own tags")
    func randomText() {
        let pieces: [String] = [
            "<", ">", "\"", "'", "&", "=", " ", "/", "a", "meta", "form", "\u{0600}", "\u{0601}", "\u{110BD}", "\u{0301}", "\u{0338}",
            "\u{20DD}", "\u{202E}", "\u{202A}", "\u{2066}", "\u{2069}", "\u{200D}", "\u{200C}", "\u{FE0F}", "👩", "\u{1F3FD}", "🇬🇧",
            "e\u{0301}", "\u{1100}\u{1161}", "\r\n", "\u{0000}", "&lt;", "&#60;",
        ]
        var random = Xorshift(state: 0x9E37_79B9_7F4A_7C15)
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...12, using: &random)
            Self.check((0..<count).map { _ in pieces.randomElement(using: &random)! }.joined())
        }
    }

    @Test("text without the five special characters is returned unchanged")
    func cleanText() {
        for value in ["", "plain", "Grüße 👩‍💻", "\u{0600}x\u{0301}"] {
            #expect(Template.escape(value, .html) == value)
        }
    }
}

@Suite("Locale tags")
struct LocaleTagTests {
    @Test("well-formed BCP 47 tags of at most 35 characters are kept, anything else is dropped")
    func shapes() {
        for kept in ["en", "de", "pt-BR", "pt_BR", "zh-Hant-TW", "es-419", "sr-Latn-RS", "en-US-x-twain"] {
            #expect(LocaleTag.validated(kept) == kept)
        }
        for dropped in [
            "", "e", "-en", "en-", "en--US", "en US", "en\n", "\u{1b}[2J", "<b>", "de-DE-abcdefghi", "1en", "éé",
            "en-" + String(repeating: "abcdefgh-", count: 4),
        ] {
            #expect(LocaleTag.validated(dropped) == nil, "\(dropped)")
        }
        #expect(LocaleTag.validated(nil) == nil)
    }
}
