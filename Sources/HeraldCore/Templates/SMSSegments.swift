import Foundation

/// How an SMS text is encoded on the air and how many segments it costs (3GPP TS 23.038).
///
/// A text in the GSM-7 default alphabet (extension characters cost two septets) fits 160 septets in
/// one segment and 153 per segment when concatenated; one character outside it makes the whole text
/// UCS-2: 70 UTF-16 units in one segment, 67 per segment when concatenated. Escape pairs and surrogate
/// pairs are never split across segments. Providers bill per segment, so operators watch this.
public struct SMSSegments: Sendable, Equatable {
    public enum Encoding: String, Sendable {
        case gsm7 = "GSM-7"
        case ucs2 = "UCS-2"
    }

    public let encoding: Encoding
    /// Septets (GSM-7) or UTF-16 code units (UCS-2).
    public let units: Int
    public let segments: Int

    /// The GSM 03.38 default alphabet (one septet each).
    static let basic: Set<Unicode.Scalar> = Set(
        "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
            .unicodeScalars)
    /// The extension table (escape + character: two septets each).
    static let extended: Set<Unicode.Scalar> = Set("^{}\\[~]|€\u{0C}".unicodeScalars)
    /// Septets of each ASCII scalar (0: not in GSM-7), so the usual code text needs no set lookups.
    static let asciiSeptets: [UInt8] = (0..<128).map { value in
        let scalar = Unicode.Scalar(UInt8(value))
        return basic.contains(scalar) ? 1 : extended.contains(scalar) ? 2 : 0
    }

    public init(_ text: String) {
        // Scalars, not Characters: "\r\n" is one Character but two septets, and a decomposed "é" is
        // composed first (it is in the alphabet; e + U+0301 is not). A text whose scalars are all in
        // the alphabet holds no combining mark and no singleton, so composing would leave it as it is:
        // only a text that fails the check is composed and checked again (composing every text went
        // through Foundation's normalisation, 4 % of an SMS worker's CPU).
        if let septets = Self.septets(text) {
            self.init(gsm7: septets)
            return
        }
        let composed = text.precomposedStringWithCanonicalMapping
        if let septets = Self.septets(composed) {
            self.init(gsm7: septets)
        } else {
            let sizes = composed.unicodeScalars.map { $0.value > 0xFFFF ? 2 : 1 }
            self.init(encoding: .ucs2, units: sizes.reduce(0, +), segments: Self.pack(sizes, single: 70, multi: 67))
        }
    }

    private init(gsm7 septets: [Int]) {
        self.init(encoding: .gsm7, units: septets.reduce(0, +), segments: Self.pack(septets, single: 160, multi: 153))
    }

    private init(encoding: Encoding, units: Int, segments: Int) {
        self.encoding = encoding
        self.units = units
        self.segments = segments
    }

    /// Each scalar's septets, or nil when one is outside GSM-7.
    static func septets(_ text: String) -> [Int]? {
        var septets: [Int] = []
        septets.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            let size: Int
            if scalar.isASCII {
                size = Int(asciiSeptets[Int(scalar.value)])
            } else {
                size = basic.contains(scalar) ? 1 : extended.contains(scalar) ? 2 : 0
            }
            guard size > 0 else { return nil }
            septets.append(size)
        }
        return septets
    }

    /// Greedy packing of indivisible items into segments.
    static func pack(_ sizes: [Int], single: Int, multi: Int) -> Int {
        let total = sizes.reduce(0, +)
        if total == 0 { return 1 }
        if total <= single { return 1 }
        var segments = 1
        var used = 0
        for size in sizes {
            if used + size > multi {
                segments += 1
                used = 0
            }
            used += size
        }
        return segments
    }
}
