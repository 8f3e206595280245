import Foundation

/// A phone number in E.164 form, validated against its country calling code.
///
/// Identity Toolkit accepts only numbers that start with `+`; Herald also tolerates the spaces, dashes,
/// dots and parentheses people type, and stores the canonical `+<digits>` form.
public struct PhoneNumber: Sendable, Hashable, CustomStringConvertible {
    /// `+` followed by 8 to 15 digits.
    public let e164: String
    /// The ITU country calling code (`1`, `44`, `358`).
    public let callingCode: String
    /// The national significant number (the digits after the calling code).
    public let nationalNumber: String
    /// ISO 3166 region derived from the number (`US`, `CA`, `GB`, `KZ`).
    public let region: String

    public var description: String { e164 }

    /// Why a number was refused; each maps to the exact Identity Toolkit message.
    public enum ParseError: Error, Equatable, Sendable {
        /// Missing, not starting with `+`, non-digits, or an unknown calling code.
        case invalidFormat
        /// Fewer digits than the country's numbering plan allows.
        case tooShort
        /// More digits than the country's plan (or E.164's 15) allows.
        case tooLong
    }

    /// Parses and validates `text`.
    public init(parsing text: String?) throws(ParseError) {
        guard let text else { throw .invalidFormat }
        // By Unicode scalars, not Characters (every send parses a number, and Character's grapheme
        // breaking showed in its profile): each accepted character is one scalar, and a character of
        // several scalars contains one that is refused below, as the Character was.
        var ascii: [UInt8] = []
        ascii.reserveCapacity(16)
        var sawPlus = false
        var firstVisible: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            if firstVisible == nil && scalar != " " && scalar != "\u{00A0}" { firstVisible = scalar }
            switch scalar {
            case "+" where sawPlus == false && ascii.isEmpty: sawPlus = true
            case " ", "-", ".", "(", ")", "\u{00A0}": continue
            case "0"..."9": ascii.append(UInt8(scalar.value))
            default: throw .invalidFormat
            }
        }
        // The `+` comes first, spaces aside (the loop above let only spaces and separators through).
        guard sawPlus, firstVisible == "+", ascii.isEmpty == false else { throw .invalidFormat }
        let digits = String(decoding: ascii, as: UTF8.self)
        guard digits.first != "0" else { throw .invalidFormat }
        guard digits.count <= 15 else { throw .tooLong }
        guard let entry = (1...3).lazy.compactMap({ CallingCodes.table[String(digits.prefix($0))] }).first,
            digits.count > entry.code.count
        else {
            throw digits.count < 4 ? .tooShort : .invalidFormat
        }
        let national = String(digits.dropFirst(entry.code.count))
        if national.count < entry.lengths.lowerBound { throw .tooShort }
        if national.count > entry.lengths.upperBound { throw .tooLong }
        self.e164 = "+" + digits
        self.callingCode = entry.code
        self.nationalNumber = national
        self.region = Self.region(for: entry, national: national)
        if entry.code == "1" {
            // NANP: area code and exchange both start with 2-9.
            let area = national.prefix(3)
            let exchange = national.dropFirst(3).prefix(1)
            guard let a = area.first, "23456789".contains(a), let e = exchange.first, "23456789".contains(e) else {
                throw .invalidFormat
            }
        }
    }

    private static func region(for entry: CallingCodes.Entry, national: String) -> String {
        switch entry.code {
        case "1": return CallingCodes.nanpAreaCodes[String(national.prefix(3))] ?? "US"
        case "7": return national.first == "6" || national.first == "7" ? "KZ" : "RU"
        default: return entry.regions[0]
        }
    }

    /// The first `length` digits after `+` (calling code included), for per-prefix limits.
    public func prefix(digits length: Int) -> String {
        "+" + String(e164.dropFirst().prefix(length))
    }

    /// The number with all but the last four digits masked (`+*******0100`), for logs and MFA hints.
    public var masked: String {
        "+" + String(repeating: "*", count: max(0, e164.count - 5)) + String(e164.suffix(4))
    }
}
