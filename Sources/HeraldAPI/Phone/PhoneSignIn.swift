import Foundation
import HeraldCore
import Logging
import Metrics

/// The server side of Firebase phone sign-in: `sendVerificationCode` creates a session and queues the
/// SMS; `signInWithPhoneNumber` spends the session for a signed-in user.
struct PhoneSignIn: Sendable {
    let store: any VerificationStore & AccountStore & DeliveryLedger & RateLimitStore & SendAdmissionStore & CredentialReplayStore
    let publisher: any JobPublisher
    let keys: HeraldKeys
    let tokens: TokenIssuer
    let limits: LimitSettings
    /// Slices of the busy shared limits (`limits.leasing`) this process spends without the store.
    let leases: LeasedLimits
    let verifier: AppVerifier
    let completion: SignInCompletion
    let signedIn: SignedInUser
    /// devMode keeps each code sealed in its session for the emulator's `verificationCodes`.
    let devMode: Bool
    let clock: any WallClock
    let logger: Logger
    let metrics = SendMetrics()

    var limiter: RateLimiter { RateLimiter(store: store) }
    var sealer: Sealer { Sealer(key: keys.sealing) }

    /// What a successful sign-in returns: tokens (or the second-factor challenge); or, when a signed-in
    /// user tried to link a number another account holds, a `temporaryProof` of the number and no tokens.
    struct SignedIn: Encodable, FirstFactorAnswer {
        var idToken: String?
        var refreshToken: String?
        var expiresIn: String?
        var localId: String?
        var isNewUser: Bool?
        var phoneNumber: String
        var temporaryProof: String?
        var temporaryProofExpiresIn: String?
        var mfaPendingCredential: String?
        var mfaInfo: [SignInCompletion.MFAInfo]?
    }

    /// `operation` of signInWithPhoneNumber (the iOS SDK always sends it; names or proto numbers).
    enum Operation: Sendable {
        case signUpOrIn, reauth, update, link

        init(_ text: String?) throws(HeraldError) {
            switch text {
            case nil, "SIGN_UP_OR_IN", "VERIFY_OP_UNSPECIFIED", "0", "1": self = .signUpOrIn
            case "REAUTH", "2": self = .reauth
            case "UPDATE", "3": self = .update
            case "LINK", "4": self = .link
            default: throw HeraldError(.invalidArgument, "operation must be SIGN_UP_OR_IN, REAUTH, UPDATE or LINK.")
            }
        }
    }

    /// How long a `temporaryProof` can be replayed (Identity Toolkit says "3600").
    static let temporaryProofTTL: TimeInterval = 3600
    /// A test number's fixed code on an account whose number a real SMS proved: the number was made a
    /// test number after a real person signed up with it, and a fixed code must not open their account.
    static let testNumberOnProvenAccount = HeraldError(
        .operationNotAllowed, "This test number belongs to an account a real SMS verified; its fixed code cannot sign in to it.")
    /// Firebase's refusal for a phone first factor on an account with a phone second factor.
    static let phoneOnMFAUser = HeraldError(
        .unsupportedFirstFactor, "A phone number cannot be set as a first factor on an SMS based MFA user.")

    /// Where a send request came from, as app verification and limits need it.
    struct Origin {
        var clientKey: String?
        var remoteIP: String?
        var bundleID: String?
        var locale: String?
        var traceparent: TraceParent
    }

    /// Validates the number and the app credential, hands back the open session for a reentrant send,
    /// otherwise admits the send under the limits, creates a session and (unless it is a test number)
    /// publishes the SMS job; returns the sessionInfo only once the broker confirmed the job. A number
    /// that is a user's first factor while the user has an SMS second factor gets no code at all
    /// (UNSUPPORTED_FIRST_FACTOR): the admission checks that in its own transaction, so it costs no
    /// store round trip of its own, which is why it comes after the app credential's check.
    func sendVerificationCode(project: ProjectSettings, body: WireBody, origin: Origin) async throws -> String {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        guard project.phone.enabled else { throw HeraldError(.operationNotAllowed) }
        let phone = try Self.parsePhone(body.string("phoneNumber"))
        let verdict = try await verifier.check(
            project: project, body: body, bundleID: origin.bundleID, isTestNumber: project.phone.testNumbers[phone.e164] != nil)
        let now = clock.now

        // Only a send with an app credential can reuse a session (ReentrantSend); without one there is nothing to look up.
        if verdict.credentialHash != nil, project.phone.resendAfter > .zero,
            let open = try await store.latestOpenSession(projectID: project.id, phoneNumber: phone.e164),
            ReentrantSend.canReuse(
                open, now: now, resendAfter: project.phone.resendAfter, credentialHash: verdict.credentialHash),
            let sealed = open.sessionInfoSealed, let token = try? sealer.open(sealed, context: Self.sealingContext(open.id))
        {
            count(project, "reentrant", phone)
            logger.info(
                "reentrant send: the open session is returned, nothing is sent",
                metadata: ["project": .string(project.id), "phone": .string(phone.masked)])
            return token
        }
        if let captchaToken = verdict.pendingCaptcha {
            try await verifier.verifyCaptcha(captchaToken, project: project, remoteIP: origin.remoteIP)
        }
        return try await issueCode(
            project: project, phone: phone, purpose: .signIn, template: .verification, origin: origin, credentialHash: verdict.credentialHash,
            refuseSecondFactorHolders: true)
    }

    /// Creates a session for `purpose` and, unless `phone` is a test number, admits the send under the
    /// limits and publishes the SMS job; returns the client's sessionInfo once the broker confirmed it.
    /// Sign-in, second-factor enrollment and second-factor sign-in all send through here; only a
    /// sign-in refuses numbers that are a first factor of a user with an SMS second factor.
    func issueCode(
        project: ProjectSettings, phone: PhoneNumber, purpose: SessionPurpose, template: SMSMessage.Template, origin: Origin,
        credentialHash: String?, refuseSecondFactorHolders: Bool = false
    ) async throws -> String {
        let fixedCode = project.phone.testNumbers[phone.e164]
        let now = clock.now
        let (token, sessionID) = SessionToken.issue(at: now)
        // The sessionInfo is kept (sealed) only where something can hand it back: a reentrant send, which
        // needs the same app credential (`ReentrantSend`), or the dev emulator's code listing. A send
        // without a credential skips the seal, one of a send's two AES-GCM seals.
        let keepsSessionInfo = credentialHash != nil || devMode
        func session(code: String, jobID: UUID?) -> VerificationSession {
            VerificationSession(
                id: sessionID, projectID: project.id, phoneNumber: phone.e164, region: phone.region,
                codeHash: OneTimeCode.hash(code, session: sessionID, hasher: keys.codeHasher), createdAt: now,
                expiresAt: now.adding(project.phone.codeTTL), maxAttempts: project.phone.maxCheckAttempts, jobID: jobID,
                sessionInfoSealed: keepsSessionInfo ? sealer.seal(token, context: Self.sealingContext(sessionID)) : nil,
                clientKey: origin.clientKey,
                credentialHash: credentialHash, purpose: purpose,
                codeSealed: devMode ? sealer.seal(code, context: "code:" + sessionID) : nil)
        }

        if let fixedCode {
            // Fictional number: fixed code, no job, no SMS, no quota.
            if refuseSecondFactorHolders, try await store.hasSecondFactor(projectID: project.id, phoneNumber: phone.e164) {
                throw Self.phoneOnMFAUser
            }
            try await store.insertSession(session(code: fixedCode, jobID: nil))
            count(project, "test_number", phone)
            logger.info("verification session for a test number", metadata: ["project": .string(project.id), "phone": .string(phone.masked)])
            return token
        }

        let code = OneTimeCode.generate(length: project.phone.codeLength)
        let jobID = SecureRandom.uuidV7(at: now)
        let job = Job(
            id: jobID, project: project.id, createdAt: now, expiresAt: now.adding(project.phone.codeTTL), locale: origin.locale,
            payload: .sms(
                SMSMessage(
                    to: phone.e164, template: template,
                    params: Self.smsParams(project, sealedCode: Sealer(key: keys.sealing).seal(code, jobID: jobID, destination: phone.e164)))))
        // Limits, pumping count, session and ledger row: one store transaction.
        let admitted = try await admit(
            project: project, phone: phone, session: session(code: code, jobID: jobID), origin: origin, now: now,
            refuseSecondFactorHolders: refuseSecondFactorHolders)
        let started = ContinuousClock.now
        do {
            try await publisher.publish(job, traceparent: origin.traceparent)
        } catch {
            // No confirm: the client is told, and no session claims an SMS was sent.
            try? await store.deleteSession(id: sessionID)
            try? await store.recordDelivery(jobID: jobID, status: .abandoned, reason: "publish failed: \(error)", now: clock.now)
            // Nothing was sent: the attempt does not count against the client's limits.
            try? await limiter.refund(admitted, now: clock.now)
            count(project, "unavailable", phone)
            logger.error(
                "verification job not confirmed by the broker",
                metadata: ["project": .string(project.id), "job.id": .string(jobID.lowercasedText), "error": .string("\(error)")])
            throw HeraldError(
                .unavailable, "The verification code could not be queued for delivery. Try again later.", retryAfter: .seconds(5))
        }
        metrics.publishConfirm.record(duration: ContinuousClock.now - started)
        count(project, "queued", phone)
        logger.info(
            "verification code queued",
            metadata: [
                "project": .string(project.id), "job.id": .string(jobID.lowercasedText),
                "phone": .string(phone.masked), "traceparent": .string(origin.traceparent.description),
            ])
        return token
    }

    /// What sessionInfo is sealed to, so a sealed value cannot be moved to another session.
    static func sealingContext(_ sessionID: String) -> String { "session:" + sessionID }

    /// Spends one attempt of the session and, with the right code, signs the number's user in; with an
    /// `idToken`, links the number to that user (or, as `operation: UPDATE`, replaces its number); with
    /// `operation: REAUTH`, signs in only the user who holds the number. A `temporaryProof` (from a link
    /// refused because another account holds the number) stands for a verified session.
    func signIn(project: ProjectSettings, body: WireBody) async throws -> SignedIn {
        if body.string("tenantId") != nil { throw HeraldError(.unsupportedTenantOperation) }
        let operation = try Operation(body.string("operation"))
        let phoneNumber: String
        // A real SMS code (not a test number's fixed one) proved the number.
        let proven: Bool
        var caller: (user: UserAccount, token: TokenIssuer.Verified)?
        if let proof = body.string("temporaryProof") {
            guard let claimed = body.string("phoneNumber") else { throw HeraldError(.missingPhoneNumber) }
            guard project.phone.enabled else { throw HeraldError(.operationNotAllowed) }
            let opened = try openProof(proof, phoneNumber: claimed, projectID: project.id)
            // The proof came from a refused link: replaying it into a link is refused the same way.
            if body.string("idToken") != nil { throw HeraldError(.phoneNumberExists) }
            try await spend(proof, opened, project: project)
            (phoneNumber, proven) = (opened.phoneNumber, opened.proven)
        } else {
            guard let sessionInfo = body.string("sessionInfo") else { throw HeraldError(.missingSessionInfo) }
            guard let code = body.string("code") else { throw HeraldError(.missingCode) }
            guard project.phone.enabled else { throw HeraldError(.operationNotAllowed) }
            // The caller is checked before the code is spent, so a stale token does not burn an attempt.
            if let idToken = body.string("idToken") { caller = try await signedIn.resolve(idToken, project: project) }
            let session = try await checkCode(project: project, sessionInfo: sessionInfo, code: code) { $0 == .signIn }
            (phoneNumber, proven) = (session.phoneNumber, session.jobID != nil)
        }
        if let caller { return try await link(phoneNumber, proven: proven, to: caller, operation: operation, project: project) }

        let now = clock.now
        let user: UserAccount
        let created: Bool
        if operation == .reauth {
            // Re-authentication proves the number again for its own user; it never creates one.
            guard var holder = try await store.user(projectID: project.id, phoneNumber: phoneNumber) else { throw HeraldError(.userNotFound) }
            if proven == false, holder.phoneProven { throw Self.testNumberOnProvenAccount }
            holder.lastLoginAt = now
            holder.phoneProven = holder.phoneProven || proven
            try await store.updateUser(holder)
            (user, created) = (holder, false)
        } else {
            (user, created) = try await store.findOrCreateUser(projectID: project.id, phoneNumber: phoneNumber, proven: proven, now: now)
            if proven == false, user.phoneProven { throw Self.testNumberOnProvenAccount }
        }
        guard user.disabled == false else { throw HeraldError(.userDisabled) }
        guard user.mfaEnrollments.isEmpty else { throw Self.phoneOnMFAUser }
        Counter(label: "herald_api_sign_ins_total", dimensions: [("project", project.id), ("outcome", "ok")]).increment()
        logger.info(
            "phone sign-in",
            metadata: [
                "project": .string(project.id), "user": .string(user.localID), "new": .stringConvertible(created),
                "reauth": .stringConvertible(operation == .reauth),
            ])
        var answer = SignedIn(localId: user.localID, isNewUser: created, phoneNumber: phoneNumber)
        answer.take(try await completion.complete(user, provider: "phone"))
        return answer
    }

    /// Links a verified number to the signed-in caller, or replaces the caller's number (`UPDATE`, a
    /// sensitive change: it needs a recent sign-in). Another account holding the number gets the caller
    /// a `temporaryProof` instead of tokens, which iOS turns into credentialAlreadyInUse: the app can
    /// sign in to that account with it.
    private func link(
        _ phoneNumber: String, proven: Bool, to caller: (user: UserAccount, token: TokenIssuer.Verified), operation: Operation,
        project: ProjectSettings
    ) async throws -> SignedIn {
        var user = caller.user
        func refused(_ holder: UserAccount) -> SignedIn {
            logger.info("phone link refused: another account holds the number", metadata: ["project": .string(project.id)])
            return SignedIn(
                phoneNumber: phoneNumber, temporaryProof: proof(for: phoneNumber, proven: proven, holder: holder, projectID: project.id),
                temporaryProofExpiresIn: String(Int(Self.temporaryProofTTL)))
        }
        if let holder = try await store.user(projectID: project.id, phoneNumber: phoneNumber), holder.localID != user.localID {
            return refused(holder)
        }
        let replaces = user.phoneNumber != nil && user.phoneNumber != phoneNumber
        if replaces {
            if operation == .link { throw HeraldError(.providerAlreadyLinked) }
            try signedIn.requireRecent(caller.token)
            completion.revokeEarlierSessions(of: &user)
        }
        user.phoneProven = (user.phoneNumber == phoneNumber && user.phoneProven) || proven
        user.phoneNumber = phoneNumber
        do {
            try await store.updateUser(user)
        } catch AccountConflict.phoneNumberExists {
            // Another account took the number meanwhile: the proof is bound to that one.
            guard let holder = try await store.user(projectID: project.id, phoneNumber: phoneNumber) else { throw HeraldError(.phoneNumberExists) }
            return refused(holder)
        }
        logger.info(
            replaces ? "phone number changed" : "phone number linked", metadata: ["project": .string(project.id), "user": .string(user.localID)])
        let secondFactor = caller.token.secondFactor.flatMap { id in user.mfaEnrollments.first { $0.enrollmentID == id } }
        let session = try await completion.session(for: user, provider: caller.token.provider, secondFactor: secondFactor)
        return SignedIn(
            idToken: session.idToken, refreshToken: session.refreshToken, expiresIn: session.expiresIn, localId: user.localID, isNewUser: false,
            phoneNumber: phoneNumber)
    }

    /// What a temporary proof carries: the verified number, whether a real SMS verified it, its project,
    /// its expiry, and the account that held the number when it was issued (with that account's
    /// `validSince`, so revoking the holder's sessions also voids the proof).
    struct Proof: Codable {
        var projectId: String
        var phoneNumber: String
        var proven: Bool
        var expiresAt: Double
        var holder: String
        var holderValidSince: Int64?
    }

    /// Sealed (AES-GCM under the sealing key), so the proof cannot be forged or read; nothing is stored
    /// until it is used.
    func proof(for phoneNumber: String, proven: Bool, holder: UserAccount, projectID: String) -> String {
        let proof = Proof(
            projectId: projectID, phoneNumber: phoneNumber, proven: proven,
            expiresAt: clock.now.addingTimeInterval(Self.temporaryProofTTL).timeIntervalSince1970, holder: holder.localID,
            holderValidSince: holder.validSince?.millisecondsSince1970)
        // Plain fields: encoding cannot fail.
        return sealer.seal(String(decoding: try! JSONEncoder().encode(proof), as: UTF8.self), context: "phone-proof")
    }

    /// The proof, when it verified `phoneNumber` (in any format), for this project, and is unexpired.
    func openProof(_ proof: String, phoneNumber: String, projectID: String) throws(HeraldError) -> Proof {
        guard let json = try? sealer.open(proof, context: "phone-proof"),
            let opened = try? JSONDecoder().decode(Proof.self, from: Data(json.utf8)), opened.projectId == projectID,
            Date(timeIntervalSince1970: opened.expiresAt) > clock.now, (try? Self.parsePhone(phoneNumber))?.e164 == opened.phoneNumber
        else { throw HeraldError(.invalidTemporaryProof) }
        return opened
    }

    /// Uses the proof up, once the account it was issued for still holds the number with the same
    /// `validSince`. Its hash goes into the store's spent credentials (until the proof's expiry), where
    /// every herald-api sees it: a second use, here or elsewhere, is INVALID_TEMPORARY_PROOF.
    func spend(_ proof: String, _ opened: Proof, project: ProjectSettings) async throws {
        guard let holder = try await store.user(projectID: project.id, phoneNumber: opened.phoneNumber), holder.localID == opened.holder,
            holder.validSince?.millisecondsSince1970 == opened.holderValidSince
        else { throw HeraldError(.invalidTemporaryProof) }
        let hash = SHA256Hex.digest("phone-proof|" + proof)
        guard try await store.spendCredential(hash: hash, projectID: project.id, expiresAt: Date(timeIntervalSince1970: opened.expiresAt)) else {
            throw HeraldError(.invalidTemporaryProof)
        }
    }

    /// Spends one check attempt of the session and, with the right code, consumes it. A session made for
    /// another purpose answers INVALID_SESSION_INFO, as an unknown one does.
    func checkCode(
        project: ProjectSettings, sessionInfo: String, code: String, purpose accepts: (SessionPurpose) -> Bool
    ) async throws -> VerificationSession {
        let sessionID = SessionToken.storageID(for: sessionInfo)
        var reservation = try await store.reserveCheckAttempt(sessionID: sessionID)
        if let reserved = reservation?.session, reserved.projectID != project.id || accepts(reserved.purpose) == false { reservation = nil }
        let decision = CodeCheckStateMachine.decide(
            reservation,
            codeMatches: { OneTimeCode.matches(code, session: sessionID, storedHash: $0.codeHash, key: keys.codeHashing) },
            now: clock.now)
        if let reserved = reservation?.session, project.phone.testNumbers[reserved.phoneNumber] == nil,
            let refusal = try await limiter.admit(
                LimitCheck.forCheck(project: project.id, phoneNumber: reserved.phoneNumber, limits: limits), now: clock.now)
        {
            logger.notice(
                "code check refused by a limit",
                metadata: [
                    "project": .string(project.id), "limit": .string(refusal.check.kind.configurationKey),
                    "policy": .string(refusal.check.policy.description),
                ])
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            throw Self.error(for: refusal)
        }
        let session: VerificationSession
        switch decision {
        case .failure(let error):
            Counter(label: "herald_api_sign_ins_total", dimensions: [("project", project.id), ("outcome", error.code.name)]).increment()
            throw error
        case .success(let value):
            session = value
        }
        guard try await store.consumeSession(id: sessionID, at: clock.now) else { throw HeraldError(.invalidSessionInfo) }
        if session.jobID != nil {
            Counter(label: "herald_api_verifications_total", dimensions: [("project", project.id), ("country", session.region)]).increment()
        }
        return session
    }

    /// Region policy, then in one store transaction prefix blocks, rate limits, pumping detection and,
    /// when all pass, the session and its ledger row. Returns the limit checks spent (to give back if
    /// publishing fails). Refusals name the limit in a log line and a metric, never the code.
    private func admit(
        project: ProjectSettings, phone: PhoneNumber, session: VerificationSession, origin: Origin, now: Date,
        refuseSecondFactorHolders: Bool
    ) async throws -> [LimitCheck] {
        guard RegionPolicy.allows(phone.region, project.phone.regions) else {
            refused(project, phone, limit: "projects[].phone.regions", policy: phone.region)
            throw HeraldError(.operationNotAllowed, RegionPolicy.refusalDetail)
        }
        let prefix = phone.prefix(digits: limits.prefixDigits)
        let checks = LimitCheck.forSend(project: project.id, phone: phone, clientKey: origin.clientKey, limits: limits)
        // Limits a leased token covers are spent here; the store decides the rest with the send.
        let coverage = leases.cover(checks, now: now)
        let send = SendAdmission(
            session: session, prefix: prefix, limits: coverage.storeChecks, pumping: limits.pumping.enabled ? limits.pumping : nil, now: now,
            refuseSecondFactorHolders: refuseSecondFactorHolders)
        let started = ContinuousClock.now
        let verdict: SendAdmission.Verdict
        do {
            verdict = try await store.admitSend(send)
        } catch {
            leases.giveBack(checks, coverage, now: now)
            throw error
        }
        metrics.admission.record(duration: ContinuousClock.now - started)
        if verdict != .admitted { leases.giveBack(checks, coverage, now: now) }
        switch verdict {
        case .admitted:
            // Every limit, covered or not, was spent in the store (a lease spent it ahead): a refund
            // after a failed publish gives each back there.
            return checks
        case .secondFactorHolder:
            count(project, "refused", phone)
            throw Self.phoneOnMFAUser
        case .blocked(let block):
            refused(project, phone, limit: "limits.pumping", policy: prefix)
            throw HeraldError(
                .quotaExceeded, "Exceeded quota for sending verification codes.",
                retryAfter: .seconds(max(1, Int64(block.until.timeIntervalSince(now)))))
        case .refused(let index, let decision):
            let refusal = RateLimiter.Refusal(check: checks[coverage.checkIndex(index)], retryAfter: decision.retryAfterDuration)
            refused(project, phone, limit: refusal.check.kind.configurationKey, policy: refusal.check.policy.description)
            throw Self.error(for: refusal)
        case .tripped:
            logger.critical(
                "number prefix blocked: send velocity far above its baseline (possible SMS pumping)",
                metadata: ["project": .string(project.id), "prefix": .string(prefix), "for": .string(DurationText.format(limits.pumping.blockFor))])
            Counter(label: "herald_api_prefix_blocks_total", dimensions: [("project", project.id), ("country", phone.region)]).increment()
            refused(project, phone, limit: "limits.pumping", policy: prefix)
            throw HeraldError(.quotaExceeded, "Exceeded quota for sending verification codes.", retryAfter: limits.pumping.blockFor)
        }
    }

    static func error(for refusal: RateLimiter.Refusal) -> HeraldError {
        let code = refusal.check.kind.refusal
        let detail = code == .quotaExceeded ? "Exceeded quota for sending verification codes." : nil
        return HeraldError(code, detail, retryAfter: refusal.retryAfter)
    }

    private func refused(_ project: ProjectSettings, _ phone: PhoneNumber, limit: String, policy: String) {
        logger.notice(
            "send refused by a limit",
            metadata: ["project": .string(project.id), "limit": .string(limit), "policy": .string(policy), "phone": .string(phone.masked)])
        Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", limit)]).increment()
        count(project, "refused", phone)
    }

    private func count(_ project: ProjectSettings, _ outcome: String, _ phone: PhoneNumber) {
        metrics.sends(project: project.id, outcome: outcome, country: phone.region).increment()
    }

    /// What the worker needs to render the SMS: the sealed code and the project's text settings.
    static func smsParams(_ project: ProjectSettings, sealedCode: String) -> [String: String] {
        var params = ["codeSealed": sealedCode, "app": project.displayName]
        if let domain = project.phone.originDomain { params["originDomain"] = domain }
        if let hash = project.phone.androidAppHash { params["appHash"] = hash }
        return params
    }

    static func parsePhone(_ text: String?) throws(HeraldError) -> PhoneNumber {
        do {
            return try PhoneNumber(parsing: text)
        } catch {
            switch error {
            case .invalidFormat: throw HeraldError(.invalidPhoneNumber, "Invalid format.")
            case .tooShort: throw HeraldError(.invalidPhoneNumber, "TOO_SHORT")
            case .tooLong: throw HeraldError(.invalidPhoneNumber, "TOO_LONG")
            }
        }
    }
}
