import HeraldCore
import Testing

@Suite("E.164 phone numbers")
struct PhoneNumberTests {
    @Test(
        "valid numbers normalise to E.164 with their region",
        arguments: [
            ("+16505553434", "+16505553434", "1", "US"),
            ("+1 (650) 555-3434", "+16505553434", "1", "US"),
            ("+15555550100", "+15555550100", "1", "US"),
            ("+1 416 555 0199", "+14165550199", "1", "CA"),
            ("+1 787 555 0100", "+17875550100", "1", "PR"),
            ("+447911123456", "+447911123456", "44", "GB"),
            ("+49 1512 3456789", "+4915123456789", "49", "DE"),
            ("+33 6 12 34 56 78", "+33612345678", "33", "FR"),
            ("+79161234567", "+79161234567", "7", "RU"),
            ("+77011234567", "+77011234567", "7", "KZ"),
            ("+8613812345678", "+8613812345678", "86", "CN"),
            ("+905321234567", "+905321234567", "90", "TR"),
            ("+35850123456", "+35850123456", "358", "FI"),
            ("+97150123456", "+97150123456", "971", "AE"),
            ("+919876543210", "+919876543210", "91", "IN"),
        ])
    func valid(input: String, e164: String, callingCode: String, region: String) throws {
        let number = try PhoneNumber(parsing: input)
        #expect(number.e164 == e164)
        #expect(number.callingCode == callingCode)
        #expect(number.region == region)
    }

    @Test(
        "malformed numbers are INVALID_PHONE_NUMBER : Invalid format.",
        arguments: [
            nil, "", "16505553434", "+", "+1-650-555-343a", "++16505553434", "+0123456789", "+999123456789",
            "phone", "+1 650 555 3434 ext 5", "+11505553434", "+16501553434", " +1650555 3434x",
        ])
    func invalidFormat(input: String?) {
        #expect(throws: PhoneNumber.ParseError.invalidFormat) { try PhoneNumber(parsing: input) }
    }

    /// Valid numbers with separators and spaces strewn between their characters still parse to
    /// themselves; with one character that is not allowed (a letter, a non-ASCII digit, a combining
    /// mark that makes an allowed character into another one, a second `+`, a visible character
    /// before the `+`) they do not.
    @Test("separators anywhere are ignored; any other character anywhere is INVALID_PHONE_NUMBER")
    func decorated() throws {
        var generator = Xorshift(state: 0x2545_F491_4F6C_DD1D)
        let separators: [String] = [" ", "-", ".", "(", ")", "\u{00A0}", ""]
        let refused: [String] = ["a", "x", "\u{0661}", "\u{FF11}", "\u{0301}", "+", "/", "\t", "#"]
        let numbers = ["+16505553434", "+447911123456", "+4915123456789", "+8613812345678", "+35850123456"]
        for _ in 0..<2_000 {
            let number = numbers.randomElement(using: &generator)!
            var characters = number.map(String.init)
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                // After the `+`, or before it when only spaces.
                let at = Int.random(in: 1...characters.count, using: &generator)
                characters.insert(separators.randomElement(using: &generator)!, at: at)
            }
            if Bool.random(using: &generator) { characters.insert(" ", at: 0) }
            let decorated = characters.joined()
            #expect(try PhoneNumber(parsing: decorated).e164 == number, "\(decorated.unicodeScalars.map(\.value))")
            let bad = refused.randomElement(using: &generator)!
            var broken = characters
            broken.insert(bad, at: Int.random(in: (bad == " " ? 1 : 0)...characters.count, using: &generator))
            let text = broken.joined()
            #expect(throws: PhoneNumber.ParseError.self, "\(text.unicodeScalars.map(\.value))") { try PhoneNumber(parsing: text) }
        }
    }

    @Test("too few digits for the country are TOO_SHORT", arguments: ["+1650555343", "+4479111", "+12", "+3361234567"])
    func tooShort(input: String) {
        #expect(throws: PhoneNumber.ParseError.tooShort) { try PhoneNumber(parsing: input) }
    }

    @Test("too many digits are TOO_LONG", arguments: ["+165055534345", "+3361234567890", "+4915123456789012"])
    func tooLong(input: String) {
        #expect(throws: PhoneNumber.ParseError.tooLong) { try PhoneNumber(parsing: input) }
    }

    @Test("masking keeps only the last four digits")
    func masked() throws {
        #expect(try PhoneNumber(parsing: "+15555550100").masked == "+*******0100")
        #expect(try PhoneNumber(parsing: "+447911123456").prefix(digits: 5) == "+44791")
    }

    @Test(
        "trunk prefixes: removed where the plan has one, kept where it is part of the number",
        arguments: [
            ("+49 0151 23456789", "+4915123456789"), ("+44 07400 123456", "+447400123456"), ("+33 06 12 34 56 78", "+33612345678"),
            ("+7 8 916 123-45-67", "+79161234567"), ("+36 06 20 123 4567", "+36201234567"), ("+1 1 650 555 0100", "+16505550100"),
            ("+39 06 1234 5678", "+390612345678"), ("+39 333 123 4567", "+393331234567"), ("+7 800 123-45-67", "+78001234567"),
            ("+4915123456789", "+4915123456789"),
        ])
    func trunkPrefixes(_ typed: String, _ e164: String) throws {
        #expect(try PhoneNumber(parsing: typed).e164 == e164)
    }

    @Test(
        "a number still starting with a trunk prefix no number of its plan starts with is refused",
        arguments: [
            "+49 00151 2345678", "+44 0 0740 012345", "+355 08001234",
        ])
    func leftoverTrunkPrefix(_ typed: String) {
        #expect(throws: PhoneNumber.ParseError.invalidFormat) { try PhoneNumber(parsing: typed) }
    }
}
