import Crypto
import Foundation

/// What an Apple identity token (the `id_token` of Sign in with Apple) says, once its signature has
/// been verified against Apple's keys. The adapter that decodes the JWT fills it; the checks below
/// decide whether it signs anybody in.
public struct AppleIdentityClaims: Sendable, Equatable {
    public var issuer: String
    public var audiences: [String]
    /// Apple's user id, stable per developer team.
    public var subject: String
    public var issuedAt: Date
    public var expiresAt: Date
    /// Lowercase hex SHA-256 of the raw nonce the app generated (Firebase's convention).
    public var nonce: String?
    public var nonceSupported: Bool?
    public var email: String?
    /// Apple sends these as a bool or as the string "true"/"false"; the decoder accepts both.
    public var emailVerified: Bool?
    public var isPrivateEmail: Bool?

    public init(
        issuer: String, audiences: [String], subject: String, issuedAt: Date, expiresAt: Date, nonce: String? = nil,
        nonceSupported: Bool? = nil, email: String? = nil, emailVerified: Bool? = nil, isPrivateEmail: Bool? = nil
    ) {
        self.issuer = issuer
        self.audiences = audiences
        self.subject = subject
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.nonce = nonce
        self.nonceSupported = nonceSupported
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
    }
}

/// The checks production Firebase makes on an Apple identity token after its signature: issuer,
/// audience, lifetime (60 s leeway for clock skew) and the nonce, in that order. Errors are Identity
/// Toolkit's; their details never contain the token.
public enum AppleIdentityCheck {
    public static let issuer = "https://appleid.apple.com"
    /// Clock skew tolerated on `exp` and `iat`.
    public static let leeway: TimeInterval = 60

    /// Lowercase hex SHA-256 of the raw nonce: what the app put into its Apple request.
    public static func nonceHash(_ rawNonce: String) -> String {
        SHA256Hex.hex(SHA256.hash(data: Data(rawNonce.utf8)))
    }

    /// Nil when `claims` may sign in to a project whose Apple client ids are `clientIDs`.
    public static func refusal(_ claims: AppleIdentityClaims, clientIDs: [String], rawNonce: String?, now: Date) -> HeraldError? {
        guard claims.issuer == issuer else {
            return HeraldError(.invalidIdPResponse, "The id_token was not issued by \(issuer).")
        }
        guard claims.audiences.contains(where: clientIDs.contains) else {
            return HeraldError(.invalidIdPResponse, "The audience in the id_token does not match the project's Apple client ids.")
        }
        guard claims.subject.isEmpty == false else {
            return HeraldError(.invalidIdPResponse, "Invalid Idp Response: id_token missing required fields.")
        }
        guard claims.expiresAt.timeIntervalSince(now) > -leeway else {
            return HeraldError(.invalidIdPResponse, "The id_token has expired.")
        }
        guard claims.issuedAt.timeIntervalSince(now) <= leeway else {
            return HeraldError(.invalidIdPResponse, "The id_token was issued in the future.")
        }
        guard let rawNonce, rawNonce.isEmpty == false else {
            return HeraldError(.missingOrInvalidNonce, "Nonce is missing in the request.")
        }
        let expected = nonceHash(rawNonce)
        guard let nonce = claims.nonce, constantTimeEquals(Array(nonce.utf8), Array(expected.utf8)) else {
            return HeraldError(
                .missingOrInvalidNonce,
                "The nonce in ID Token \"\(claims.nonce ?? "")\" does not match the SHA256 hash of the raw nonce \"\(rawNonce)\" in the request.")
        }
        return nil
    }

    /// The replay key of a verified token, from what it says rather than how it is spelled (a token is
    /// accepted once; Apple's are single-use): issuer, subject, issue time and nonce. Apple issues one token
    /// per sign-in request and the nonce is the app's, fresh for each, so two genuine tokens never share it.
    public static func replayKey(of claims: AppleIdentityClaims) -> String {
        let issued = Int64((claims.issuedAt.timeIntervalSince1970 * 1000).rounded())
        return SHA256Hex.digest("apple.com|\(claims.issuer)|\(claims.subject)|\(issued)|\(claims.nonce ?? "")")
    }

    /// The error a replayed token gets, Firebase's text.
    public static let duplicate = HeraldError(.missingOrInvalidNonce, "Duplicate credential received. Please try again with a new credential.")
}

/// When a cached JSON Web Key Set (Apple's signing keys) is fetched again: periodically, when a token
/// names a key the set does not have (Apple rotated) but at most once a minute, and — while no set was
/// ever fetched — on demand, pausing briefly after a failure so an outage is not hammered.
///
/// Pure: the owner reports fetches and asks what to do for a key id at an instant.
public struct KeySetRefreshPolicy: Sendable, Equatable {
    /// Keys older than this are fetched again before use (the old set is still used if that fails).
    public var maxAge: TimeInterval = 3600
    /// At most one fetch for an unknown key id per this interval.
    public var unknownKeyInterval: TimeInterval = 60
    /// After a failed fetch, wait this long before the next one (answers say unavailable meanwhile).
    public var failurePause: TimeInterval = 5

    /// When the current set was fetched (nil: never).
    public private(set) var fetchedAt: Date?
    /// When the last fetch began.
    public private(set) var attemptedAt: Date?
    /// Whether the last fetch failed.
    public private(set) var lastFailed = false

    public init(maxAge: TimeInterval = 3600, unknownKeyInterval: TimeInterval = 60, failurePause: TimeInterval = 5) {
        self.maxAge = maxAge
        self.unknownKeyInterval = unknownKeyInterval
        self.failurePause = failurePause
    }

    /// What to do before verifying a token signed with a key the current set has (`known`) or not.
    public enum Decision: Sendable, Equatable {
        /// Verify with the current set.
        case use
        /// Fetch the set first, then verify (with the old set if the fetch fails and one exists).
        case fetch
        /// The key is not in the set and the set was fetched too recently to try again: refuse the token.
        case unknownKey
        /// No set, and the last fetch failed moments ago: the client should come back later.
        case unavailable(retryAfter: TimeInterval)
    }

    public func decide(keyKnown: Bool, now: Date) -> Decision {
        guard let fetchedAt else {
            if lastFailed, let attemptedAt, now.timeIntervalSince(attemptedAt) < failurePause {
                return .unavailable(retryAfter: failurePause - now.timeIntervalSince(attemptedAt))
            }
            return .fetch
        }
        let sinceAttempt = attemptedAt.map { now.timeIntervalSince($0) } ?? .infinity
        if keyKnown {
            // Stale keys still verify: refresh them, but not more often than failures allow.
            let stale = now.timeIntervalSince(fetchedAt) >= maxAge
            return stale && (lastFailed == false || sinceAttempt >= failurePause) ? .fetch : .use
        }
        return sinceAttempt >= unknownKeyInterval ? .fetch : .unknownKey
    }

    /// A fetch began at `now`.
    public mutating func fetchStarted(at now: Date) {
        attemptedAt = now
    }

    /// The fetch that began last succeeded (`true`) or failed.
    public mutating func fetchFinished(succeeded: Bool, at now: Date) {
        lastFailed = succeeded == false
        if succeeded { fetchedAt = now }
    }
}
