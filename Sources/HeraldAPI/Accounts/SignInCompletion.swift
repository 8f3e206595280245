import Foundation
import HeraldCore

/// The end of every first-factor sign-in (phone code, email link) and of a second-factor one: either
/// tokens, or — for a user with a second factor enrolled — an `mfaPendingCredential` and the masked
/// factors, with no tokens at all.
///
/// The pending credential is stateless: the user, project, first-factor provider and an expiry, sealed
/// with AES-GCM under the sealing key, so any API process can open it and nobody can forge one.
struct SignInCompletion: Sendable {
    let store: any AccountStore
    let tokens: TokenIssuer
    let keys: HeraldKeys
    let clock: any WallClock
    /// How long a user has to pass the second factor.
    static let pendingTTL: TimeInterval = 600

    /// A signed-in session.
    struct Session: Sendable {
        var idToken: String
        var refreshToken: String
        var expiresIn: String
    }

    /// What the first factor gave the user.
    enum Outcome: Sendable {
        case signedIn(Session)
        case secondFactorRequired(pendingCredential: String, factors: [MFAInfo])
    }

    /// `mfaInfo[]` entries: the enrolled number masked, as Identity Toolkit shows it before the second factor.
    struct MFAInfo: Encodable, Sendable {
        var mfaEnrollmentId: String
        var displayName: String?
        var enrolledAt: String
        var phoneInfo: String

        init(_ enrollment: MFAEnrollment, masked: Bool) {
            mfaEnrollmentId = enrollment.enrollmentID
            displayName = enrollment.displayName
            enrolledAt = Timestamp.format(enrollment.enrolledAt)
            // Enrolled numbers are stored in E.164, so they always parse.
            phoneInfo = masked ? ((try? PhoneNumber(parsing: enrollment.phoneNumber))?.masked ?? "+****") : enrollment.phoneNumber
        }
    }

    /// Tokens, or the second-factor challenge when the user has one enrolled.
    func complete(_ user: UserAccount, provider: String) async throws -> Outcome {
        if user.mfaEnrollments.isEmpty == false {
            return .secondFactorRequired(
                pendingCredential: pendingCredential(for: user, provider: provider),
                factors: user.mfaEnrollments.map { MFAInfo($0, masked: true) })
        }
        return .signedIn(try await session(for: user, provider: provider, secondFactor: nil))
    }

    /// Revokes every session of `user` so far: `validSince` moves to the next whole second, so every ID
    /// token (whose `iat` counts whole seconds) and refresh token issued until now stops working. Call on
    /// every credential change (password, email, phone, provider, second factor) and when the proof of an
    /// address takes an account over; the caller stores the user.
    func revokeEarlierSessions(of user: inout UserAccount) {
        let next = Date(timeIntervalSince1970: clock.now.timeIntervalSince1970.rounded(.down) + 1)
        user.validSince = max(user.validSince ?? next, next)
    }

    /// An ID token and a new refresh token. Right after `revokeEarlierSessions` this waits (under a
    /// second) until `validSince` has passed, so the fresh tokens are not revoked with the old ones.
    func session(for user: UserAccount, provider: String, secondFactor: MFAEnrollment?) async throws -> Session {
        // Only the sub-second wait a revocation causes; a validSince an admin set far ahead is not waited for.
        if let validSince = user.validSince {
            let wait = validSince.timeIntervalSince(clock.now)
            if wait > 0, wait <= 1 { try await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1)) }
        }
        let now = clock.now
        let idToken = try await tokens.idToken(for: user, provider: provider, authTime: now, now: now, secondFactor: secondFactor)
        let refresh = tokens.refreshToken(
            for: user, provider: RefreshProvider(provider: provider, secondFactor: secondFactor?.enrollmentID).stored, now: now)
        try await store.insertRefreshToken(refresh.record)
        return Session(idToken: idToken, refreshToken: refresh.token, expiresIn: String(Int(tokens.idTokenTTL.seconds)))
    }

    /// What a pending credential carries.
    struct Pending: Codable, Sendable {
        var localId: String
        var projectId: String
        var provider: String
        var expiresAt: Double
    }

    func pendingCredential(for user: UserAccount, provider: String) -> String {
        let pending = Pending(
            localId: user.localID, projectId: user.projectID, provider: provider,
            expiresAt: clock.now.addingTimeInterval(Self.pendingTTL).timeIntervalSince1970)
        // Encoding four plain fields cannot fail.
        let json = String(decoding: try! JSONEncoder().encode(pending), as: UTF8.self)
        return Sealer(key: keys.sealing).seal(json, context: "mfa-pending")
    }

    /// Opens a pending credential: forged or expired → INVALID_MFA_PENDING_CREDENTIAL; another
    /// project's → INVALID_PROJECT_ID.
    func openPending(_ credential: String, projectID: String) throws(HeraldError) -> Pending {
        guard let json = try? Sealer(key: keys.sealing).open(credential, context: "mfa-pending"),
            let pending = try? JSONDecoder().decode(Pending.self, from: Data(json.utf8))
        else { throw HeraldError(.invalidMFAPendingCredential) }
        guard pending.projectId == projectID else {
            throw HeraldError(.invalidProjectID, "Project ID does not match MFA pending credential.")
        }
        guard Date(timeIntervalSince1970: pending.expiresAt) > clock.now else { throw HeraldError(.invalidMFAPendingCredential) }
        return pending
    }
}

/// A first-factor sign-in answer (phone, email link, Apple): tokens, or the second-factor challenge.
protocol FirstFactorAnswer {
    var idToken: String? { get set }
    var refreshToken: String? { get set }
    var expiresIn: String? { get set }
    var mfaPendingCredential: String? { get set }
    var mfaInfo: [SignInCompletion.MFAInfo]? { get set }
}

extension FirstFactorAnswer {
    /// Fills in what the sign-in ended with.
    mutating func take(_ outcome: SignInCompletion.Outcome) {
        switch outcome {
        case .signedIn(let session):
            idToken = session.idToken
            refreshToken = session.refreshToken
            expiresIn = session.expiresIn
        case .secondFactorRequired(let pending, let factors):
            mfaPendingCredential = pending
            mfaInfo = factors
        }
    }
}

/// How a refresh token remembers the sign-in it continues: the first-factor provider, and the second
/// factor when one was passed (`password|mfa:<enrollmentId>`), so refreshed ID tokens keep both.
struct RefreshProvider: Equatable {
    var provider: String
    var secondFactor: String?

    init(provider: String, secondFactor: String?) {
        self.provider = provider
        self.secondFactor = secondFactor
    }

    init(stored: String) {
        let parts = stored.split(separator: "|", maxSplits: 1).map(String.init)
        provider = parts.first ?? stored
        secondFactor = parts.count > 1 && parts[1].hasPrefix("mfa:") ? String(parts[1].dropFirst(4)) : nil
    }

    var stored: String { secondFactor.map { "\(provider)|mfa:\($0)" } ?? provider }
}
