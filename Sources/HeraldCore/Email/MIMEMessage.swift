import Foundation

/// A complete RFC 5322 message, built here rather than by libcurl so that what is sent is exactly what
/// tests parse: `multipart/alternative` with a text/plain part first and text/html last, both UTF-8 and
/// quoted-printable (sign-in URLs are long and full of `=`), an RFC 2047 subject, CRLF line endings.
public struct MIMEMessage: Sendable, Equatable {
    public var from: Mailbox
    public var replyTo: Mailbox?
    /// The recipient's address.
    public var to: String
    public var subject: String
    public var text: String
    public var html: String
    public var date: Date
    /// `<random@domain>`, also logged, so a message can be found in the MTA's logs.
    public var messageID: String
    /// Random, at least 24 characters; never appears in the parts (QP output has no `--` runs of it).
    public var boundary: String

    public init(
        from: Mailbox, replyTo: Mailbox?, to: String, subject: String, text: String, html: String, date: Date, messageID: String,
        boundary: String
    ) {
        self.from = from
        self.replyTo = replyTo
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.date = date
        self.messageID = messageID
        self.boundary = boundary
    }

    /// A fresh Message-ID on `domain` with 128 random bits.
    public static func newMessageID(domain: String) -> String {
        "<" + SecureRandom.base64URL(bytes: 16) + "@" + domain + ">"
    }

    /// A fresh boundary (32 characters, none of which quoted-printable output can start a line with).
    public static func newBoundary() -> String {
        "=_herald_" + SecureRandom.alphanumeric(24)
    }

    /// The message bytes, CRLF line endings, no trailing `.` (libcurl adds the end-of-data marker and
    /// dot-stuffs lines itself).
    public var rendered: Data {
        var lines: [String] = []
        lines.append("From: " + Self.sanitized(from).headerValue)
        if let replyTo { lines.append("Reply-To: " + Self.sanitized(replyTo).headerValue) }
        lines.append("To: " + Self.headerValue(to))
        lines.append("Subject: " + EncodedWord.encode(Self.headerValue(subject), headerNameLength: "Subject: ".count))
        lines.append("Date: " + Self.rfc5322Date(date))
        lines.append("Message-ID: " + Self.headerValue(messageID))
        lines.append("MIME-Version: 1.0")
        lines.append("Auto-Submitted: auto-generated")
        // Folded so no header line passes 78 characters.
        lines.append("Content-Type: multipart/alternative;\r\n boundary=\"\(boundary)\"")
        lines.append("")
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            lines.append("--" + boundary)
            lines.append("Content-Type: \(type); charset=UTF-8")
            lines.append("Content-Transfer-Encoding: quoted-printable")
            lines.append("")
            lines.append(QuotedPrintable.encode(body))
        }
        lines.append("--" + boundary + "--")
        lines.append("")
        return Data(lines.joined(separator: "\r\n").utf8)
    }

    /// Header values never carry CR or LF (header injection through a display name or subject).
    static func headerValue(_ value: String) -> String {
        String(String.UnicodeScalarView(value.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }))
    }

    static func sanitized(_ mailbox: Mailbox) -> Mailbox {
        Mailbox(displayName: mailbox.displayName.map(headerValue), address: headerValue(mailbox.address))
    }

    /// `Tue, 22 Aug 2017 14:08:43 +0000`, always in English and UTC whatever the process's locale is.
    public static func rfc5322Date(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(days[(parts.weekday ?? 1) - 1]), \(two(parts.day)) \(months[(parts.month ?? 1) - 1]) \(parts.year ?? 1970) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) +0000"
    }
}

/// Quoted-printable (RFC 2045 §6.7) for UTF-8 text: CRLF line breaks, lines of at most 76 characters
/// with soft breaks, `=` and every non-ASCII byte as `=XX`, trailing spaces and tabs encoded.
public enum QuotedPrintable {
    public static func encode(_ text: String) -> String {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        return normalized.split(separator: "\n", omittingEmptySubsequences: false).map { encodeLine(Array($0.utf8)) }
            .joined(separator: "\r\n")
    }

    static let hex = Array("0123456789ABCDEF".utf8)

    static func encodeLine(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3 / 2 + 8)
        var lineLength = 0
        for (index, byte) in bytes.enumerated() {
            let literal: Bool
            switch byte {
            case 0x21...0x3C, 0x3E...0x7E: literal = true
            case 0x20, 0x09: literal = index != bytes.count - 1
            default: literal = false
            }
            let width = literal ? 1 : 3
            // 75 characters plus the soft-break `=` make 76.
            if lineLength + width > 75 {
                out += [UInt8(ascii: "="), 0x0D, 0x0A]
                lineLength = 0
            }
            if literal {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "="), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
            lineLength += width
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes quoted-printable text back to its UTF-8 string (tests, and anyone checking a message).
    public static func decode(_ text: String) -> String {
        var bytes: [UInt8] = []
        let source = Array(text.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=\n", with: "").utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "="), index + 2 < source.count,
                let value = UInt8(String(decoding: source[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                index += 3
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// RFC 2047 encoded words for non-ASCII header text: `=?UTF-8?B?…?=`, each word at most 75 characters,
/// split only between characters (never inside a UTF-8 sequence), words joined by CRLF + space.
public enum EncodedWord {
    /// `value` unchanged when it is printable ASCII and fits on the header line, else encoded words.
    public static func encode(_ value: String, headerNameLength: Int = 0) -> String {
        if value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }), value.utf8.count + headerNameLength <= 78,
            value.contains("=?") == false
        {
            return value
        }
        // 75 - "=?UTF-8?B?".count - "?=".count = 63 base64 characters, i.e. at most 45 bytes per word.
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in value {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45, chunk.isEmpty == false {
                words.append(word(chunk))
                chunk = []
            }
            chunk += bytes
        }
        if chunk.isEmpty == false { words.append(word(chunk)) }
        return words.joined(separator: "\r\n ")
    }

    static func word(_ bytes: [UInt8]) -> String {
        "=?UTF-8?B?" + Data(bytes).base64EncodedString() + "?="
    }
}
