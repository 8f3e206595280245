import HeraldCore
import Testing

@Suite("Masked destinations in listings")
struct MaskedDestinationTests {
    @Test(
        "numbers keep the country's first digits and the last four, addresses the first letter and the domain, tokens eight characters",
        arguments: [
            ("+447700900123", JobType.sms, "+44******0123"), ("+15555550100", .sms, "+15*****0100"), ("+4912", .sms, "+**12"),
            ("alice@example.com", .email, "a***@example.com"), ("@example.com", .email, "***"), ("nobody", .email, "***"),
            ("0123456789abcdef", .push, "01234567…"), ("0123", .push, "****"),
        ])
    func masks(_ destination: String, _ type: JobType, _ expected: String) {
        #expect(MaskedDestination.mask(destination, type: type) == expected)
    }
}
