import Crypto
import Foundation

/// A pending phone verification: what `sendVerificationCode` creates and `signInWithPhoneNumber` spends.
///
/// The client holds the opaque `sessionInfo`; the store keeps only its SHA-256 (`id`) and the code's
/// keyed hash, so a copy of the database yields neither.
public struct VerificationSession: Sendable, Equatable {
    /// SHA-256 of the client's sessionInfo, hex.
    public var id: String
    public var projectID: String
    public var phoneNumber: String
    /// ISO region of the number (for conversion per country).
    public var region: String
    /// `OneTimeCode.hash` of the code.
    public var codeHash: Data
    public var createdAt: Date
    public var expiresAt: Date
    /// Check attempts spent so far (each reserved before the code is compared).
    public var attempts: Int
    public var maxAttempts: Int
    /// Set once a correct code signed in; a consumed session is gone for the client.
    public var consumedAt: Date?
    /// The delivery job, nil for test numbers (nothing is sent).
    public var jobID: UUID?
    /// The client's sessionInfo, sealed, so a reentrant send can hand the same one back.
    public var sessionInfoSealed: String?
    /// The client address key the send came from (reentrancy matches on it).
    public var clientKey: String?
    /// SHA-256 of the app credential (iOS receipt) the send came with (reentrancy matches on it).
    public var credentialHash: String?
    /// What the code proves once checked: a sign-in, or a second factor for one user.
    public var purpose: SessionPurpose
    /// The code sealed to the session, kept only in devMode for the emulator's `verificationCodes`.
    public var codeSealed: String?

    public init(
        id: String, projectID: String, phoneNumber: String, region: String = "", codeHash: Data, createdAt: Date, expiresAt: Date,
        attempts: Int = 0, maxAttempts: Int, consumedAt: Date? = nil, jobID: UUID? = nil, sessionInfoSealed: String? = nil,
        clientKey: String? = nil, credentialHash: String? = nil, purpose: SessionPurpose = .signIn, codeSealed: String? = nil
    ) {
        self.purpose = purpose
        self.codeSealed = codeSealed
        self.id = id
        self.projectID = projectID
        self.phoneNumber = phoneNumber
        self.region = region
        self.codeHash = codeHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.attempts = attempts
        self.maxAttempts = maxAttempts
        self.consumedAt = consumedAt
        self.jobID = jobID
        self.sessionInfoSealed = sessionInfoSealed
        self.clientKey = clientKey
        self.credentialHash = credentialHash
    }
}

/// Why a phone code was sent. A session only works for the operation it was created by, so a code
/// sent to enroll a second factor can never sign anyone in with the number, and the other way round.
public enum SessionPurpose: Sendable, Equatable, CustomStringConvertible {
    /// `sendVerificationCode` → `signInWithPhoneNumber`.
    case signIn
    /// `mfaEnrollment:start` for the user `localID`.
    case mfaEnrollment(localID: String)
    /// `mfaSignIn:start` for the user's enrollment.
    case mfaSignIn(localID: String, enrollmentID: String)

    /// The stored form (`signIn`, `mfaEnroll:<localId>`, `mfaSignIn:<localId>:<enrollmentId>`).
    public var description: String {
        switch self {
        case .signIn: "signIn"
        case .mfaEnrollment(let localID): "mfaEnroll:\(localID)"
        case .mfaSignIn(let localID, let enrollmentID): "mfaSignIn:\(localID):\(enrollmentID)"
        }
    }

    public init?(stored: String) {
        let parts = stored.split(separator: ":").map(String.init)
        switch (parts.first, parts.count) {
        case ("signIn", 1): self = .signIn
        case ("mfaEnroll", 2): self = .mfaEnrollment(localID: parts[1])
        case ("mfaSignIn", 3): self = .mfaSignIn(localID: parts[1], enrollmentID: parts[2])
        default: return nil
        }
    }
}

/// The client's side of a session: an unguessable token whose hash names the stored session.
///
/// A token starts with its creation time, and so does the stored id. Every send inserts a session;
/// with ids in time order that row lands at the right edge of the id index, on a page the batch
/// already holds, instead of on a random one. A random id cost each send an index page read and
/// written (SQLite's WAL, PostgreSQL's full-page images), and the writes grew with the table. The time is no
/// secret (the client asked at that moment; the row keeps it anyway); the 32 random bytes after it are
/// what make the token unguessable.
public enum SessionToken {
    /// A new token and its stored id. The token is milliseconds since 1970 (6 bytes, big-endian), then
    /// 32 random bytes: base64url, 51 characters; six bytes are exactly the first 8 characters, so the
    /// time can be read back without the rest. The id is made from the time bytes at hand rather than
    /// read back out of the token's text (every send issues one).
    public static func issue(at date: Date) -> (token: String, storageID: String) {
        let milliseconds = milliseconds(date)
        // The 38 bytes on the stack, the token and the id written straight into their strings: every
        // send issues one, and arrays, `Data` and copies made it about twenty allocations.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { raw in
            for index in 0..<6 { raw[index] = timeByte(index, of: milliseconds) }
            SecureRandom.fill(UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: raw[6...])))
            let token = Base64URL.string(UnsafeRawBufferPointer(raw))
            return (token, storageID(time: UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: raw[..<6])), token: token))
        }
    }

    /// The least stored id of a session created at or after `date`: that time's 12 hex digits. Ids of
    /// sessions created later start with the same digits or larger ones, so `id >= floor` holds every
    /// session created since `date` (and ids from before the time was in them, which sort anywhere:
    /// a reader also compares the creation time).
    public static func storageIDFloor(createdAt date: Date) -> String {
        let milliseconds = milliseconds(date)
        return String(unsafeUninitializedCapacity: 12) { out in
            var position = 0
            for index in 0..<6 { HexDigits.write(timeByte(index, of: milliseconds), into: out, at: &position) }
            return position
        }
    }

    /// Milliseconds since 1970, as a token's time and `created_at_ms` count them (rounded down).
    private static func milliseconds(_ date: Date) -> UInt64 {
        UInt64(max(0, date.timeIntervalSince1970 * 1000))
    }

    /// Byte `index` (0–5) of `milliseconds` as six big-endian bytes.
    private static func timeByte(_ index: Int, of milliseconds: UInt64) -> UInt8 {
        UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - UInt64(index))))
    }

    /// The stored id for a client token: its creation time as 12 hex digits, then the first 52 hex
    /// digits (208 bits) of its SHA-256, 64 in all. Any other text (tokens issued before ids carried the
    /// time were 43 characters) is stored under its whole SHA-256, which is also 64 hex digits; such a
    /// token still finds its session, and a made-up one finds none either way.
    public static func storageID(for token: String) -> String {
        guard token.utf8.count == 51, let time = Data(base64URLEncoded: String(token.prefix(8))), time.count == 6 else {
            return SHA256Hex.digest(token)
        }
        return time.withUnsafeBytes { storageID(time: $0, token: token) }
    }

    /// The six time bytes' hex, then the first 26 bytes of the token's SHA-256 in hex.
    private static func storageID(time: UnsafeRawBufferPointer, token: String) -> String {
        var token = token
        let digest = token.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        return digest.withUnsafeBytes { digest in
            String(unsafeUninitializedCapacity: 64) { out in
                var position = 0
                HexDigits.write(time, into: out, at: &position)
                HexDigits.write(UnsafeRawBufferPointer(rebasing: digest.prefix(26)), into: out, at: &position)
                return position
            }
        }
    }
}

/// The result of one code check, decided from what the store returned after reserving an attempt.
public enum CodeCheckStateMachine {
    /// What the store knows after trying to reserve one attempt for a session.
    public struct Reservation: Sendable, Equatable {
        /// The session as stored (attempts already include this one when `reserved`).
        public var session: VerificationSession
        /// False when the session had no attempts left (or was consumed) before this check.
        public var reserved: Bool

        public init(session: VerificationSession, reserved: Bool) {
            self.session = session
            self.reserved = reserved
        }
    }

    /// Decides a check. Order matters and follows Identity Toolkit: unknown or spent sessions first,
    /// then expiry, then the attempt budget, and only then the code itself, so a burned session answers
    /// `TOO_MANY_ATTEMPTS_TRY_LATER` even for the right code.
    public static func decide(
        _ reservation: Reservation?, codeMatches: (VerificationSession) -> Bool, now: Date
    ) -> Result<VerificationSession, HeraldError> {
        guard let reservation, reservation.session.consumedAt == nil else {
            return .failure(HeraldError(.invalidSessionInfo))
        }
        let session = reservation.session
        guard now < session.expiresAt else { return .failure(HeraldError(.sessionExpired)) }
        guard reservation.reserved else { return .failure(HeraldError(.tooManyAttempts)) }
        guard codeMatches(session) else { return .failure(HeraldError(.invalidCode)) }
        return .success(session)
    }
}

/// Reentrant sends: the iOS SDK may call send again for the same number (a view reappearing). Within
/// `phone.resendAfter`, a second send with the same app credential (the receipt that only that app
/// instance holds) gets the same session back and nothing is published; after that a new code goes out
/// and older sessions end. The client address alone never qualifies: behind a NAT, a carrier gateway or
/// an untrusted proxy it is shared, and whoever got the open session could burn its attempts.
public enum ReentrantSend {
    public static func canReuse(_ session: VerificationSession, now: Date, resendAfter: Duration, credentialHash: String?) -> Bool {
        guard resendAfter > .zero, session.consumedAt == nil, session.sessionInfoSealed != nil, now < session.expiresAt,
            now < session.createdAt.adding(resendAfter), let credentialHash
        else { return false }
        return credentialHash == session.credentialHash
    }
}
