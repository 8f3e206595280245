import Foundation

/// Text from outside (a client's header, a broker user's message id, a provider's error) made safe for a
/// log line or a terminal: control characters and the invisible bidirectional controls are written as
/// escapes, so such text can neither end a line and forge the next one, nor move the cursor, clear the
/// screen or reorder what an operator reads.
public enum LogText {
    /// `text` with C0 and C1 controls, DEL, the bidi controls and the line and paragraph separators
    /// written as `\n`, `\r`, `\t` or `\u{…}`; a backslash is doubled so an escape cannot be forged.
    /// Returns `text` itself when there is nothing to escape (the common case, checked on bytes).
    /// `keepingTabs` leaves tabs as they are, for tab-separated output whose columns are the caller's.
    public static func escaped(_ text: String, keepingTabs: Bool = false) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") || $0 >= 0xC2 }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += keepingTabs ? "\t" : "\\t"
            case "\\": out += "\\\\"
            case _ where needsEscape(scalar): out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: true
        // ALM, LRM/RLM, LRE…RLO, LRI…PDI, and LINE/PARAGRAPH SEPARATOR (line breaks to some terminals).
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
        default: false
        }
    }

    /// An AMQP `message_id` for a log line: Herald's own ids (UUIDs) as they are; anything else, which a
    /// broker user chose, cut to 64 characters (the log formats escape what is left).
    public static func messageID(_ id: String?) -> String {
        guard let id else { return "-" }
        return UUID(parsing: id) != nil || id.count <= 64 ? id : String(id.prefix(64)) + "…"
    }
}
