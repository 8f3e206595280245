import Foundation

/// What a provider answered, made safe to keep: providers echo the message they refused, and the
/// message holds a one-time code, yet their own error codes (Twilio's 21211, a gateway's "mode 400")
/// are what an operator needs to read. So only what Herald sent is taken out: the whole text where it
/// is echoed, and every run of four or more digits it contained (a code, also when echoed alone or
/// cut short), each digit as `#`; the destination's digits likewise, as Herald masks a number
/// everywhere it shows one. Other digits stay.
public enum ProviderEcho {
    /// `echo` without the text Herald sent (`sent`), the digit runs in it, or `destination`'s digits.
    public static func scrub(_ echo: String, sent: String, destination: String = "") -> String {
        var text = echo
        if sent.isEmpty == false {
            // As sent, and as a gateway's JSON or form body carried it (`Template`'s escapes).
            for form in [sent, Template.escape(sent, .jsonString), Template.escape(sent, .formURLEncoded)] where form.isEmpty == false {
                text = text.replacingOccurrences(of: form, with: "[message]")
            }
        }
        let destinationDigits = String(destination.filter { $0.isASCII && $0.isNumber })
        var runs = digitRuns(in: sent, atLeast: 4)
        if destinationDigits.count >= 4 { runs.insert(destinationDigits) }
        // Gateways often echo a number without its calling code: a run of seven or more digits that
        // ends the destination's goes too.
        for run in digitRuns(in: text, atLeast: 7) where destinationDigits.hasSuffix(run) { runs.insert(run) }
        for run in runs.sorted(by: { $0.count > $1.count }) {
            text = text.replacingOccurrences(of: run, with: String(repeating: "#", count: run.count))
        }
        return text
    }

    /// The runs of ASCII digits in `text` at least `length` long, once each.
    static func digitRuns(in text: String, atLeast length: Int) -> Set<String> {
        var runs: Set<String> = []
        var current = ""
        for character in text {
            if character.isASCII, character.isNumber {
                current.append(character)
            } else {
                if current.count >= length { runs.insert(current) }
                current = ""
            }
        }
        if current.count >= length { runs.insert(current) }
        return runs
    }
}
