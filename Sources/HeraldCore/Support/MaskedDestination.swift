/// Destinations as operators see them in listings: enough to recognise a message they are asked about,
/// not enough to harvest numbers or addresses from a screen or a terminal log.
public enum MaskedDestination {
    /// `+447700900123` → `+44******0123`; `alice@example.com` → `a***@example.com`; a device token →
    /// its first eight characters and `…` (an Apple token likewise).
    public static func mask(_ destination: String, type: JobType) -> String {
        switch type {
        case .sms: phone(destination)
        case .email: email(destination)
        case .push, .apple: destination.count <= 8 ? String(repeating: "*", count: destination.count) : destination.prefix(8) + "…"
        }
    }

    static func phone(_ number: String) -> String {
        let digits = number.hasPrefix("+") ? Substring(number.dropFirst()) : Substring(number)
        guard digits.count >= 8 else { return "+" + String(repeating: "*", count: max(0, digits.count - 2)) + digits.suffix(2) }
        return "+" + digits.prefix(2) + String(repeating: "*", count: digits.count - 6) + digits.suffix(4)
    }

    static func email(_ address: String) -> String {
        guard let at = address.lastIndex(of: "@"), at > address.startIndex else { return "***" }
        return String(address[address.startIndex]) + "***" + address[at...]
    }
}
