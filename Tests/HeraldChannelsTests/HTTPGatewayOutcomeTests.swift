import Foundation
import HeraldCore
import Testing

@testable import HeraldChannels

/// How a generic gateway's answers become outcomes: the provider's own code when `errorCodePath`
/// finds one, and refusals quoted with only what Herald sent taken out.
@Suite("HTTP gateway outcome mapping")
struct HTTPGatewayOutcomeTests {
    static let sent = "Your code is 482913"
    static let codePath = JSONPointer("/error/code")

    static func outcome(_ status: Int, _ body: String) -> DeliveryOutcome {
        HTTPGatewayChannel.outcome(
            status: status, retryAfter: nil, body: Data(body.utf8), errorCode: codePath, sent: sent, destination: "+447911123456")
    }

    @Test("errorCodePath: the provider's code is the outcome's, for refusals and retries; without one, http_<status>")
    func providerCodes() {
        #expect(Self.outcome(400, #"{"error":{"code":21211,"message":"not a valid number"}}"#).errorCode == "21211")
        #expect(Self.outcome(429, #"{"error":{"code":"20429"}}"#).errorCode == "20429")
        #expect(Self.outcome(400, #"{"message":"no code here"}"#).errorCode == "http_400")
        #expect(Self.outcome(503, "<html>down</html>").errorCode == "http_503")
        #expect(
            HTTPGatewayChannel.outcome(status: 400, retryAfter: nil, body: Data(#"{"error":{"code":1}}"#.utf8)).errorCode == "http_400", "no path set"
        )
    }

    @Test("a refusal's reason keeps the provider's digits and drops the code it echoes")
    func readableReason() {
        guard case .permanent(let reason, _) = Self.outcome(400, #"{"error":{"code":21211,"echo":"Your code is 482913","to":"447911123456"}}"#) else {
            Issue.record("not permanent")
            return
        }
        #expect(reason.contains("21211"))
        #expect(reason.contains("482913") == false && reason.contains("[message]"))
        #expect(reason.contains("447911123456") == false)
    }
}
