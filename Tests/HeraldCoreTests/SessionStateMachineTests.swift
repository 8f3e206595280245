import Foundation
import HeraldCore
import HeraldTesting
import Testing

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
    func tokens() throws {
        let now = Date(timeIntervalSince1970: 1_790_000_000.123)
        let token = SessionToken.issue(at: now).token
        #expect(token.count == 51)
        // 6 bytes of milliseconds, big-endian, then 32 random ones.
        let raw = try #require(Data(base64URLEncoded: token))
        #expect(raw.count == 38)
        #expect(raw.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } == 1_790_000_000_123)
        #expect(SessionToken.issue(at: now).token != token)
        let id = SessionToken.storageID(for: token)
        #expect(id.count == 64)
        #expect(id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(id != token)
        #expect(SessionToken.storageID(for: token) == id)
        // The random part differs even within one millisecond, and so does the stored id.
        #expect(SessionToken.storageID(for: SessionToken.issue(at: now).token) != id)
        // The rest of the id is the token's digest, not something a client could derive without the token.
        #expect(id.dropFirst(12) == SHA256Hex.digest(token).prefix(52))
        // Issuing makes the id from the time at hand: the same id the token's text gives.
        let issued = SessionToken.issue(at: now)
        #expect(SessionToken.storageID(for: issued.token) == issued.storageID)
        #expect(issued.storageID.prefix(12) == id.prefix(12))
    }

    @Test("stored session ids grow with the time the token was issued")
    func idsInTimeOrder() {
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let ids = (0..<200).map { step in
            // Two milliseconds apart (a Date's seconds are binary fractions), an hour further every 50.
            SessionToken.storageID(for: SessionToken.issue(at: start.addingTimeInterval(Double(step) * 0.002 + Double(step / 50) * 3_600)).token)
        }
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
        #expect(ids[0].prefix(12) == String(1_790_000_000_000, radix: 16).leftPadded(to: 12))
    }

    @Test("the id floor of a time sorts after every id issued before that millisecond and before every one from it on")
    func idFloor() {
        let since = Date(timeIntervalSince1970: 1_790_000_060)
        let floor = SessionToken.storageIDFloor(createdAt: since)
        #expect(floor == String(1_790_000_060_000, radix: 16).leftPadded(to: 12))
        for offset in [-3_600.0, -0.002, -0.001] {
            let id = SessionToken.issue(at: since.addingTimeInterval(offset)).storageID
            #expect(id < floor, "\(offset)")
        }
        for offset in [0.0, 0.0004, 0.001, 3_600] {
            let id = SessionToken.issue(at: since.addingTimeInterval(offset)).storageID
            #expect(id >= floor, "\(offset)")
            // The floor counts milliseconds as created_at_ms does (rounded down).
            #expect(id.prefix(12) == SessionToken.storageIDFloor(createdAt: since.addingTimeInterval(offset)))
        }
    }

    @Test("a token issued before ids carried the time, or any other text, is stored under its whole digest")
    func legacyTokens() {
        let legacy = SecureRandom.base64URL(bytes: 32)
        #expect(legacy.count == 43)
        #expect(SessionToken.storageID(for: legacy) == SHA256Hex.digest(legacy))
        // 51 characters whose first eight are not base64url: no time to read, so the plain digest.
        let odd = "!!!!!!!!" + String(repeating: "A", count: 43)
        #expect(SessionToken.storageID(for: odd) == SHA256Hex.digest(odd))
        #expect(SessionToken.storageID(for: "") == SHA256Hex.digest(""))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
