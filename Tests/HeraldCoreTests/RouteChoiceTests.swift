import Foundation
import HeraldCore
import Testing

@Suite("Route choice")
struct RouteChoiceTests {
    static let chain = ["twilio", "vonage", "telnyx"]
    static let later = Date(timeIntervalSince1970: 1_800_000_030)

    static func next(_ permissions: [String: CircuitBreaker.Permission] = [:], _ attempts: [RouteChoice.Attempt] = []) -> RouteChoice.Decision {
        RouteChoice.next(chain: chain, permissions: permissions, attempts: attempts)
    }

    @Test("the first eligible provider of the chain; an open one is skipped, a probing one is eligible")
    func firstEligible() {
        #expect(Self.next() == .send(provider: "twilio"))
        #expect(Self.next(["twilio": .refused(until: Self.later)]) == .send(provider: "vonage"))
        #expect(Self.next(["twilio": .probe]) == .send(provider: "twilio"))
        #expect(RouteChoice.next(chain: [], permissions: [:], attempts: []) == .noRoute)
    }

    @Test("a provider failure moves on to the next provider, wrapping round; a retry-later stays unless its breaker opened")
    func afterAttempts() {
        #expect(Self.next([:], [.init(provider: "twilio", met: .providerFailure)]) == .send(provider: "vonage"))
        #expect(Self.next([:], [.init(provider: "telnyx", met: .providerFailure)]) == .send(provider: "twilio"), "wraps round")
        #expect(
            Self.next(["telnyx": .refused(until: Self.later)], [.init(provider: "vonage", met: .providerFailure)]) == .send(provider: "twilio"))
        #expect(Self.next([:], [.init(provider: "vonage", met: .retryLater)]) == .send(provider: "vonage"))
        #expect(Self.next(["vonage": .refused(until: Self.later)], [.init(provider: "vonage", met: .retryLater)]) == .send(provider: "telnyx"))
    }

    @Test("every provider open: wait for the earliest comeback, or for an operator when all are held open")
    func allOpen() {
        let soon = Self.later.addingTimeInterval(-20)
        #expect(
            Self.next(["twilio": .refused(until: Self.later), "vonage": .refused(until: soon), "telnyx": .refused(until: nil)])
                == .wait(until: soon))
        #expect(Self.next(["twilio": .refused(until: nil), "vonage": .refused(until: nil), "telnyx": .refused(until: nil)]) == .wait(until: nil))
    }
}
