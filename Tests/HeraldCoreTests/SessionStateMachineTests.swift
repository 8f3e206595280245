import Foundation
import HeraldCore
import Testing

/// A clock tests move by hand.
final class TestClock: WallClock, @unchecked Sendable {
    var now: Date
    init(_ now: Date = Date(timeIntervalSince1970: 1_800_000_000)) { self.now = now }
    func advance(_ seconds: TimeInterval) { now = now.addingTimeInterval(seconds) }
}

@Suite("Verification session state machine")
struct SessionStateMachineTests {
    let clock = TestClock()

    func session(attempts: Int = 0, max: Int = 3, consumed: Bool = false) -> VerificationSession {
        VerificationSession(
            id: "s", projectID: "p", phoneNumber: "+15555550100", codeHash: Data(), createdAt: clock.now,
            expiresAt: clock.now.addingTimeInterval(300), attempts: attempts, maxAttempts: max,
            consumedAt: consumed ? clock.now : nil)
    }

    func decide(_ reservation: CodeCheckStateMachine.Reservation?, matches: Bool) -> HeraldError.Code? {
        switch CodeCheckStateMachine.decide(reservation, codeMatches: { _ in matches }, now: clock.now) {
        case .success: nil
        case .failure(let error): error.code
        }
    }

    @Test("unknown and consumed sessions are INVALID_SESSION_INFO")
    func unknown() {
        #expect(decide(nil, matches: true) == .invalidSessionInfo)
        #expect(decide(.init(session: session(consumed: true), reserved: false), matches: true) == .invalidSessionInfo)
    }

    @Test("the right code within the TTL and budget succeeds")
    func success() {
        #expect(decide(.init(session: session(attempts: 1), reserved: true), matches: true) == nil)
    }

    @Test("a wrong code is INVALID_CODE")
    func wrong() {
        #expect(decide(.init(session: session(attempts: 1), reserved: true), matches: false) == .invalidCode)
    }

    @Test("after codeTTL the session answers SESSION_EXPIRED, even for the right code")
    func expiry() {
        let stored = session(attempts: 1)
        clock.advance(299)
        #expect(decide(.init(session: stored, reserved: true), matches: true) == nil)
        clock.advance(1)
        #expect(decide(.init(session: stored, reserved: true), matches: true) == .sessionExpired)
    }

    @Test("once the budget is spent every attempt, even the right code, is TOO_MANY_ATTEMPTS_TRY_LATER")
    func burned() {
        let stored = session(attempts: 3, max: 3)
        #expect(decide(.init(session: stored, reserved: false), matches: true) == .tooManyAttempts)
        #expect(decide(.init(session: stored, reserved: false), matches: false) == .tooManyAttempts)
    }

    @Test("session tokens are unguessable and stored only as a hash")
    func tokens() {
        let token = SessionToken.generate()
        #expect(token.count == 43)
        #expect(SessionToken.generate() != token)
        let id = SessionToken.storageID(for: token)
        #expect(id.count == 64)
        #expect(id != token)
        #expect(SessionToken.storageID(for: token) == id)
    }
}
