/// Composes the SMS a user receives: the localized text, then (when the app uses them) the Android
/// SMS Retriever hash on its own line and the origin-bound code line `@<domain> #<code>`, which must be
/// the last line for iOS and browser autofill (WICG sms-one-time-codes).
public enum SMSText {
    public static func compose(text: String, code: String, androidAppHash: String?, originDomain: String?) -> String {
        var lines = text
        if let androidAppHash { lines += "\n" + androidAppHash }
        if let originDomain { lines += "\n\n@\(originDomain) #\(code)" }
        return lines
    }
}
