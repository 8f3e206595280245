import Foundation
import HeraldCore
import Logging

/// Phone as a second factor (Identity Toolkit v2): enrollment (`mfaEnrollment:start|finalize|withdraw`)
/// and sign-in (`mfaSignIn:start|finalize`). Codes go out through the same sessions, limits, queue and
/// templates as sign-in codes (template `mfa`); each session only works for the step it was sent for.
struct PhoneMFA: Sendable {
    let store: any AccountStore
    let phone: PhoneSignIn
    let verifier: AppVerifier
    let completion: SignInCompletion
    let signedIn: SignedInUser
    let clock: any WallClock
    let logger: Logger
    /// Second factors one account may hold.
    static let maximumEnrollments = 5

    struct Tokens: Encodable {
        var idToken: String
        var refreshToken: String
    }

    private func gate(_ project: ProjectSettings) throws(HeraldError) {
        guard project.mfa.phoneEnabled else { throw HeraldError(.operationNotAllowed, "SMS based MFA not enabled.") }
    }

    /// Sends an enrollment code to `phoneEnrollmentInfo.phoneNumber` for the signed-in user.
    func startEnrollment(project: ProjectSettings, body: WireBody, origin: PhoneSignIn.Origin) async throws -> [String: [String: String]] {
        try gate(project)
        let (user, token) = try await signedIn.resolveRecent(body.string("idToken"), project: project)
        guard token.provider != "phone", token.provider != "anonymous", token.provider != "custom", user.email != nil else {
            throw HeraldError(.unsupportedFirstFactor, "MFA is not available for the given first factor.")
        }
        guard user.emailVerified else { throw HeraldError(.unverifiedEmail, "Need to verify email first before enrolling second factors.") }
        guard let info = body.object("phoneEnrollmentInfo") else { throw HeraldError(.invalidArgument, "((Missing phoneEnrollmentInfo.))") }
        let number = try Self.parse(info.string("phoneNumber"))
        if user.mfaEnrollments.contains(where: { $0.phoneNumber == number.e164 }) {
            throw HeraldError(.secondFactorExists, "Phone number already enrolled as second factor for this account.")
        }
        guard user.mfaEnrollments.count < Self.maximumEnrollments else { throw HeraldError(.secondFactorLimitExceeded) }
        let verdict = try await verifier.check(
            project: project, body: info, bundleID: origin.bundleID, isTestNumber: project.phone.testNumbers[number.e164] != nil)
        if let captcha = verdict.pendingCaptcha { try await verifier.verifyCaptcha(captcha, project: project, remoteIP: origin.remoteIP) }
        let sessionInfo = try await phone.issueCode(
            project: project, phone: number, purpose: .mfaEnrollment(localID: user.localID), template: .mfa, origin: origin,
            credentialHash: verdict.credentialHash)
        return ["phoneSessionInfo": ["sessionInfo": sessionInfo]]
    }

    /// Checks the enrollment code and adds the factor; answers tokens that carry it.
    func finalizeEnrollment(project: ProjectSettings, body: WireBody) async throws -> Tokens {
        try gate(project)
        var (user, token) = try await signedIn.resolveRecent(body.string("idToken"), project: project)
        guard let info = body.object("phoneVerificationInfo") else { throw HeraldError(.invalidArgument, "((Missing phoneVerificationInfo.))") }
        guard let code = info.string("code") else { throw HeraldError(.missingCode) }
        guard let sessionInfo = info.string("sessionInfo") else { throw HeraldError(.missingSessionInfo) }
        let localID = user.localID
        let session = try await phone.checkCode(project: project, sessionInfo: sessionInfo, code: code) {
            $0 == .mfaEnrollment(localID: localID)
        }
        // Re-read: another finalize may have enrolled the number meanwhile.
        user = try await store.user(projectID: project.id, localID: localID) ?? user
        if user.mfaEnrollments.contains(where: { $0.phoneNumber == session.phoneNumber }) {
            throw HeraldError(.secondFactorExists, "Phone number already enrolled as second factor for this account.")
        }
        let enrollment = MFAEnrollment(
            enrollmentID: SecureRandom.alphanumeric(28), phoneNumber: session.phoneNumber, displayName: body.string("displayName"),
            enrolledAt: clock.now)
        try await store.addMFAEnrollment(enrollment, projectID: project.id, localID: localID)
        user.mfaEnrollments.append(enrollment)
        // A new factor revokes the sessions that did not pass it.
        completion.revokeEarlierSessions(of: &user)
        try await store.updateUser(user)
        logger.info("second factor enrolled", metadata: ["project": .string(project.id), "user": .string(localID)])
        let tokens = try await completion.session(for: user, provider: token.provider, secondFactor: enrollment)
        return Tokens(idToken: tokens.idToken, refreshToken: tokens.refreshToken)
    }

    /// Removes a factor; answers fresh tokens without it.
    func withdraw(project: ProjectSettings, body: WireBody) async throws -> Tokens {
        try gate(project)
        var (user, token) = try await signedIn.resolveRecent(body.string("idToken"), project: project)
        guard let enrollmentID = body.string("mfaEnrollmentId"),
            try await store.removeMFAEnrollment(projectID: project.id, localID: user.localID, enrollmentID: enrollmentID)
        else { throw HeraldError(.mfaEnrollmentNotFound) }
        user.mfaEnrollments.removeAll { $0.enrollmentID == enrollmentID }
        completion.revokeEarlierSessions(of: &user)
        try await store.updateUser(user)
        logger.info("second factor withdrawn", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        let tokens = try await completion.session(for: user, provider: token.provider, secondFactor: nil)
        return Tokens(idToken: tokens.idToken, refreshToken: tokens.refreshToken)
    }

    /// Sends a code to the enrolled number (never to a number the client names: iOS sends it masked).
    func startSignIn(project: ProjectSettings, body: WireBody, origin: PhoneSignIn.Origin) async throws -> [String: [String: String]] {
        try gate(project)
        guard let credential = body.string("mfaPendingCredential") else {
            throw HeraldError(.missingMFAPendingCredential, "Request does not have MFA pending credential.")
        }
        guard let enrollmentID = body.string("mfaEnrollmentId") else {
            throw HeraldError(.missingMFAEnrollmentID, "No second factor identifier is provided.")
        }
        let pending = try completion.openPending(credential, projectID: project.id)
        guard let user = try await store.user(projectID: project.id, localID: pending.localId) else { throw HeraldError(.userNotFound) }
        guard let enrollment = user.mfaEnrollments.first(where: { $0.enrollmentID == enrollmentID }) else {
            throw HeraldError(.mfaEnrollmentNotFound)
        }
        let number = try Self.parse(enrollment.phoneNumber)
        let info = body.object("phoneSignInInfo") ?? WireBody(fields: [:])
        let verdict = try await verifier.check(
            project: project, body: info, bundleID: origin.bundleID, isTestNumber: project.phone.testNumbers[number.e164] != nil)
        if let captcha = verdict.pendingCaptcha { try await verifier.verifyCaptcha(captcha, project: project, remoteIP: origin.remoteIP) }
        let sessionInfo = try await phone.issueCode(
            project: project, phone: number, purpose: .mfaSignIn(localID: user.localID, enrollmentID: enrollmentID), template: .mfa,
            origin: origin, credentialHash: verdict.credentialHash)
        return ["phoneResponseInfo": ["sessionInfo": sessionInfo]]
    }

    /// Checks the second-factor code; answers the tokens the first factor withheld.
    func finalizeSignIn(project: ProjectSettings, body: WireBody) async throws -> Tokens {
        try gate(project)
        guard let credential = body.string("mfaPendingCredential") else {
            throw HeraldError(.missingCredential, "Please set MFA Pending Credential.")
        }
        guard let info = body.object("phoneVerificationInfo") else { throw HeraldError(.invalidArgument, "MFA provider not supported!") }
        guard let code = info.string("code") else { throw HeraldError(.missingCode) }
        guard let sessionInfo = info.string("sessionInfo") else { throw HeraldError(.missingSessionInfo) }
        let pending = try completion.openPending(credential, projectID: project.id)
        let session = try await phone.checkCode(project: project, sessionInfo: sessionInfo, code: code) { purpose in
            if case .mfaSignIn(let localID, _) = purpose { return localID == pending.localId }
            return false
        }
        guard case .mfaSignIn(_, let enrollmentID) = session.purpose,
            var user = try await store.user(projectID: project.id, localID: pending.localId),
            let enrollment = user.mfaEnrollments.first(where: { $0.enrollmentID == enrollmentID })
        else { throw HeraldError(.mfaEnrollmentNotFound) }
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        user.lastLoginAt = clock.now
        try await store.updateUser(user)
        logger.info("second-factor sign-in", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        let tokens = try await completion.session(for: user, provider: pending.provider, secondFactor: enrollment)
        return Tokens(idToken: tokens.idToken, refreshToken: tokens.refreshToken)
    }

    static func parse(_ text: String?) throws(HeraldError) -> PhoneNumber {
        do {
            return try PhoneNumber(parsing: text)
        } catch {
            throw HeraldError(.invalidPhoneNumber, "Invalid format.")
        }
    }
}
