/// A client's locale (`X-Firebase-Locale`, `languageCode`) as Herald keeps it: a well-formed BCP 47
/// tag of at most 35 characters, or nothing. The text is the client's and ends up in jobs, the ledger,
/// the status page and terminals, so anything else (control characters, markup, 64 KiB of text) is
/// dropped here and the project's default locale applies. Firebase answers such a request normally too,
/// so it is not refused.
public enum LocaleTag {
    /// The longest tag kept: RFC 5646 §4.4.1's limit for a language tag an implementation must store.
    public static let maximumLength = 35

    /// `text` when it is a tag (`en`, `pt-BR`, `zh-Hant-TW`, `es-419`; `_` as separator as Apple writes
    /// it), nil otherwise. Checks the shape, not the registry: a language subtag of 2 to 8 letters, then
    /// subtags of 1 to 8 letters or digits.
    public static func validated(_ text: String?) -> String? {
        guard let text, text.isEmpty == false, text.utf8.count <= maximumLength else { return nil }
        var subtags = 0
        var length = 0
        var lettersOnly = true
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: "_"):
                guard (1...8).contains(length), subtags > 0 || (length >= 2 && lettersOnly) else { return nil }
                subtags += 1
                length = 0
                lettersOnly = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                length += 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                length += 1
                lettersOnly = false
            default:
                return nil
            }
        }
        guard (1...8).contains(length), subtags > 0 || (length >= 2 && lettersOnly) else { return nil }
        return text
    }
}
