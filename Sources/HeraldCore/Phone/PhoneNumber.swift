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
        guard sawPlus, firstVisible == "+", let first = ascii.first else { throw .invalidFormat }
        // From here on by bytes: every one is an ASCII digit, so a byte count is a digit count.
        guard first != UInt8(ascii: "0") else { throw .invalidFormat }
        // E.164's 15 digits, and room for a trunk prefix typed after the calling code (removed below).
        guard ascii.count <= 15 + CallingCodes.longestTrunkPrefix else { throw .tooLong }
        guard let entry = (1...min(3, ascii.count)).lazy.compactMap({ CallingCodes.table[String(decoding: ascii[..<$0], as: UTF8.self)] }).first,
            ascii.count > entry.code.utf8.count
        else {
            throw ascii.count < 4 ? .tooShort : .invalidFormat
        }
        var nationalDigits = ascii[entry.code.utf8.count...]
        // "+49 0151…": the 0 is what a caller dials inside Germany, not part of the number. As in
        // libphonenumber, a trunk prefix goes only when what remains is still a number of the plan's
        // length (and does not start with 0), so a number that merely starts with the prefix's digits
        // (Russia's 8-800) stays whole. A number still starting with a prefix that no number of its plan
        // starts with is none of the plan's numbers, and is refused rather than stored as a wrong one.
        if let prefixes = CallingCodes.trunkPrefixes[entry.code] {
            for prefix in prefixes where nationalDigits.starts(with: prefix.digits.utf8) {
                let rest = nationalDigits.dropFirst(prefix.digits.utf8.count)
                guard entry.lengths.contains(rest.count), rest.first != UInt8(ascii: "0"),
                    prefix.beginsNumbers == false || entry.lengths.contains(nationalDigits.count) == false
                else { continue }
                nationalDigits = rest
                break
            }
            // Every send parses a number: a flag per prefix, no array.
            var prefixed = false
            var mayBeNumber = false
            for prefix in prefixes where nationalDigits.starts(with: prefix.digits.utf8) {
                prefixed = true
                mayBeNumber = mayBeNumber || prefix.beginsNumbers
            }
            if prefixed, mayBeNumber == false { throw .invalidFormat }
        }
        if nationalDigits.count < entry.lengths.lowerBound { throw .tooShort }
        if nationalDigits.count > entry.lengths.upperBound || entry.code.utf8.count + nationalDigits.count > 15 { throw .tooLong }
        let national = String(decoding: nationalDigits, as: UTF8.self)
        self.e164 = "+" + entry.code + national
        self.callingCode = entry.code
        self.nationalNumber = national
        self.region = Self.region(for: entry, national: national)
        if entry.code == "1" {
            // NANP: area code and exchange both start with 2-9.
            let start = nationalDigits.startIndex
            guard nationalDigits.count > 3, (0x32...0x39).contains(nationalDigits[start]), (0x32...0x39).contains(nationalDigits[start + 3]) else {
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
        String(decoding: e164.utf8.prefix(length + 1), as: UTF8.self)
    }

    /// The number with all but the last four digits masked (`+*******0100`), for logs and MFA hints.
    public var masked: String {
        "+" + String(repeating: "*", count: max(0, e164.count - 5)) + String(e164.suffix(4))
    }
}
