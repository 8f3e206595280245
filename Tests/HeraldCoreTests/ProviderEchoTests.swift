import HeraldCore
import Testing

/// A provider's answer keeps its own codes and loses only what Herald sent.
@Suite("Provider echoes")
struct ProviderEchoTests {
    static let sent = "Your Herald code is 482913. It expires in 5 minutes.\n@example.com #482913"

    @Test("the provider's own digits stay readable")
    func codesStay() {
        #expect(ProviderEcho.scrub(#"{"error":"mode 400","code":21211}"#, sent: Self.sent) == #"{"error":"mode 400","code":21211}"#)
    }

    @Test("the echoed message, raw or as a JSON string, becomes [message]; the code alone or cut short is masked")
    func sentTextGoes() {
        #expect(ProviderEcho.scrub("refused: \(Self.sent)", sent: Self.sent) == "refused: [message]")
        let json = #"{"body":"Your Herald code is 482913. It expires in 5 minutes.\n@example.com #482913"}"#
        #expect(ProviderEcho.scrub(json, sent: Self.sent) == #"{"body":"[message]"}"#)
        #expect(ProviderEcho.scrub("code 482913 rejected (21610)", sent: Self.sent) == "code ###### rejected (21610)")
        #expect(
            ProviderEcho.scrub(#"{"body":"Your Herald code is 482913. It exp"}"#, sent: Self.sent)
                == #"{"body":"Your Herald code is ######. It exp"}"#)
        #expect(ProviderEcho.scrub("nothing sent", sent: "") == "nothing sent")
        #expect(
            ProviderEcho.scrub(#"{"error":"invalid destination 5555550100","code":21211}"#, sent: Self.sent, destination: "+15555550100")
                == #"{"error":"invalid destination ##########","code":21211}"#)
    }
}
