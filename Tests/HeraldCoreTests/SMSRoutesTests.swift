import HeraldCore
import Testing

@Suite("SMS routes")
struct SMSRoutesTests {
    static let routes = try! SMSRoutes([
        "+44": ["vonage", "twilio"], "+4477": ["twilio"], "GB": ["telnyx"], "US": ["twilio", "telnyx"], "default": ["twilio"],
    ])

    @Test("the longest prefix wins, then the region, then default")
    func precedence() throws {
        #expect(Self.routes.chain(for: "+447700900123", region: "GB") == ["twilio"], "+4477 over +44")
        #expect(Self.routes.chain(for: "+441632960123", region: "GB") == ["vonage", "twilio"], "+44 over the region")
        #expect(Self.routes.chain(for: "+15555550100", region: "US") == ["twilio", "telnyx"])
        #expect(Self.routes.chain(for: "+33612345678", region: "FR") == ["twilio"], "default")
        #expect(try SMSRoutes([:]).chain(for: "+33612345678", region: "FR") == [], "no route, no default")
    }

    @Test("keys are +digits, ISO regions or default; the names they use are listed once")
    func keys() {
        #expect(throws: SMSRoutes.InvalidKey(key: "uk")) { try SMSRoutes(["uk": ["twilio"]]) }
        #expect(throws: SMSRoutes.InvalidKey(key: "+")) { try SMSRoutes(["+": ["twilio"]]) }
        #expect(throws: SMSRoutes.InvalidKey(key: "+44a")) { try SMSRoutes(["+44a": ["twilio"]]) }
        #expect(Self.routes.providerNames == ["twilio", "vonage", "telnyx"])
    }
}
