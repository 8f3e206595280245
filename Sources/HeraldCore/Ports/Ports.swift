import Foundation

/// Publishes a job durably. Returns only once the broker has confirmed it (persistent, routed);
/// throws when it could not, in which case the job must be treated as never sent.
public protocol JobPublisher: Sendable {
    /// `traceparent` (W3C) links the job to the request that caused it.
    func publish(_ job: Job, traceparent: TraceParent) async throws
}

/// Sends one SMS through one provider and says what happened. Implementations never throw for
/// provider answers; every answer maps to exactly one `DeliveryOutcome` (with the provider's price
/// when it gave one).
public protocol SMSChannel: Sendable {
    /// The provider's name from configuration (`twilio-us`, `http`), for logs, metrics and the ledger.
    var name: String { get }
    func deliver(_ message: OutgoingSMS) async -> DeliveryReport
    /// The error codes it reports whatever the provider answers (transport failures), so their
    /// `herald_worker_provider_errors_total` series exist at 0 from the start.
    var knownErrorCodes: [String] { get }
}

extension SMSChannel {
    public var knownErrorCodes: [String] { [] }
}

/// Submits one rendered email. Like `SMSChannel`, every answer maps to a `DeliveryOutcome`.
public protocol EmailChannel: Sendable {
    /// `smtp` or `console`, for logs and metrics.
    var name: String { get }
    /// `envelopeFrom` is the SMTP MAIL FROM (bounces), normally the From address.
    func deliver(_ message: MIMEMessage, envelopeFrom: String) async -> DeliveryOutcome
}

/// A rendered SMS, ready for a provider.
public struct OutgoingSMS: Sendable, Equatable {
    public var jobID: UUID
    public var project: String
    /// E.164.
    public var to: String
    /// The destination's ISO region (`GB`; "" when unknown), which picks the sender: read from `to`
    /// when asked (most providers have one sender, and parsing a number is a visible share of a job).
    public var region: String { regionGiven ?? (try? PhoneNumber(parsing: to))?.region ?? "" }
    private var regionGiven: String?
    public var body: String
    public var expiresAt: Date
    /// When the provider is called: a code's remaining life (`expiresAt` − `now`) becomes the
    /// message's validity at providers that take one.
    public var now: Date

    /// `region`: when the caller knows it (nil: read from `to` when asked).
    public init(jobID: UUID, project: String, to: String, region: String? = nil, body: String, expiresAt: Date, now: Date = Date()) {
        self.jobID = jobID
        self.project = project
        self.to = to
        self.regionGiven = region
        self.body = body
        self.expiresAt = expiresAt
        self.now = now
    }

    /// Whole seconds the code has left, at least 1.
    public var remainingSeconds: Int { max(1, Int(expiresAt.timeIntervalSince(now).rounded(.down))) }
}

/// A user account, the subset of Identity Toolkit's that phone, email-link and second-factor sign-in need.
public struct UserAccount: Sendable, Equatable {
    /// 28 alphanumerics, Firebase's localId shape.
    public var localID: String
    public var projectID: String
    public var phoneNumber: String?
    /// Lower-cased.
    public var email: String?
    public var emailVerified: Bool
    /// `PasswordHash` text; set by admins (firebase-admin `create_user(password=…)`), removed when an
    /// email link proves someone else controls an unverified address.
    public var passwordHash: String?
    public var displayName: String?
    /// The user has signed in with an email link at least once (`signinMethods` lists `emailLink`).
    public var emailLinkSignin: Bool
    public var createdAt: Date
    public var lastLoginAt: Date
    /// Tokens issued before this instant are revoked.
    public var validSince: Date?
    public var disabled: Bool
    /// Second factors, oldest first.
    public var mfaEnrollments: [MFAEnrollment]
    /// Identity providers linked to the account (Sign in with Apple), at most one per provider.
    public var identities: [FederatedIdentity]
    /// Custom claims an admin set, a JSON object (`CustomClaims`); they go into every ID token issued after.
    public var customAttributes: String?
    /// A real SMS code proved `phoneNumber` (not a test number's fixed code, not an admin).
    public var phoneProven: Bool

    public init(
        localID: String, projectID: String, phoneNumber: String? = nil, email: String? = nil, emailVerified: Bool = false,
        passwordHash: String? = nil, displayName: String? = nil, emailLinkSignin: Bool = false, createdAt: Date, lastLoginAt: Date,
        validSince: Date? = nil, disabled: Bool = false, mfaEnrollments: [MFAEnrollment] = [], identities: [FederatedIdentity] = [],
        customAttributes: String? = nil, phoneProven: Bool = false
    ) {
        self.phoneProven = phoneProven
        self.identities = identities
        self.customAttributes = customAttributes
        self.localID = localID
        self.projectID = projectID
        self.phoneNumber = phoneNumber
        self.email = email
        self.emailVerified = emailVerified
        self.passwordHash = passwordHash
        self.displayName = displayName
        self.emailLinkSignin = emailLinkSignin
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.validSince = validSince
        self.disabled = disabled
        self.mfaEnrollments = mfaEnrollments
    }
}

/// An account at an identity provider linked to a user: Apple's `sub` (stable per developer team) and
/// what the provider said about the person the last time they signed in with it.
public struct FederatedIdentity: Sendable, Equatable {
    /// `apple.com`.
    public var providerID: String
    /// The provider's user id (`sub`).
    public var federatedID: String
    /// Lower-cased; for Apple maybe a private relay address (`@privaterelay.appleid.com`).
    public var email: String?
    public var emailVerified: Bool
    /// Apple's `is_private_email`: the address is a relay that forwards only registered senders' mail.
    public var isPrivateEmail: Bool
    public var displayName: String?
    public var linkedAt: Date

    public init(
        providerID: String, federatedID: String, email: String? = nil, emailVerified: Bool = false, isPrivateEmail: Bool = false,
        displayName: String? = nil, linkedAt: Date
    ) {
        self.providerID = providerID
        self.federatedID = federatedID
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.displayName = displayName
        self.linkedAt = linkedAt
    }
}

/// A phone number enrolled as a second factor.
public struct MFAEnrollment: Sendable, Equatable {
    /// 28 alphanumerics.
    public var enrollmentID: String
    public var phoneNumber: String
    public var displayName: String?
    public var enrolledAt: Date

    public init(enrollmentID: String, phoneNumber: String, displayName: String?, enrolledAt: Date) {
        self.enrollmentID = enrollmentID
        self.phoneNumber = phoneNumber
        self.displayName = displayName
        self.enrolledAt = enrolledAt
    }
}

/// An email action code as stored: the hash of the code, the address it was sent to, its life.
public struct OobRecord: Sendable, Equatable {
    /// `OobCode.storageHash` of the code.
    public var codeHash: String
    public var projectID: String
    /// `EMAIL_SIGNIN`, `VERIFY_EMAIL`, `PASSWORD_RESET`, `VERIFY_AND_CHANGE_EMAIL` or `RECOVER_EMAIL`.
    public var requestType: String
    public var email: String
    public var createdAt: Date
    public var expiresAt: Date
    public var consumedAt: Date?
    /// The email job; nil when an admin took the link instead (`returnOobLink`).
    public var jobID: UUID?
    /// The link sealed to the code hash, kept only in devMode for the emulator's `oobCodes`.
    public var linkSealed: String?
    /// The user the code acts on (every type but EMAIL_SIGNIN): a recover-email code names the address it
    /// restores, which the user no longer has.
    public var localID: String?
    /// VERIFY_AND_CHANGE_EMAIL: the address the account moves to when the link is opened.
    public var newEmail: String?
    /// The request asked the app to finish the action (`canHandleCodeInApp`): the action handler
    /// redirects to the continue URL instead of serving its own page.
    public var inApp: Bool

    public init(
        codeHash: String, projectID: String, requestType: String, email: String, createdAt: Date, expiresAt: Date,
        consumedAt: Date? = nil, jobID: UUID? = nil, linkSealed: String? = nil, localID: String? = nil, newEmail: String? = nil,
        inApp: Bool = false
    ) {
        self.localID = localID
        self.newEmail = newEmail
        self.inApp = inApp
        self.codeHash = codeHash
        self.projectID = projectID
        self.requestType = requestType
        self.email = email
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
        self.jobID = jobID
        self.linkSealed = linkSealed
    }
}

/// A write that would give two accounts of a project the same email or phone number.
public enum AccountConflict: Error, Equatable {
    case emailExists
    case phoneNumberExists
    case localIDExists
    /// The provider account is linked to another user of the project.
    case federatedIDExists
    /// The user already has an account of that provider linked.
    case providerAlreadyLinked
}

/// A refresh token as stored: only its hash, and who it belongs to.
public struct RefreshTokenRecord: Sendable, Equatable {
    public var tokenHash: String
    public var projectID: String
    public var localID: String
    /// The provider the session began with (`phone`), carried into refreshed ID tokens.
    public var provider: String
    public var createdAt: Date

    public init(tokenHash: String, projectID: String, localID: String, provider: String, createdAt: Date) {
        self.tokenHash = tokenHash
        self.projectID = projectID
        self.localID = localID
        self.provider = provider
        self.createdAt = createdAt
    }
}

/// Verification sessions, kept where every API process sees them.
public protocol VerificationStore: Sendable {
    func insertSession(_ session: VerificationSession) async throws
    func deleteSession(id: String) async throws
    /// Atomically spends one attempt if the session is unconsumed and has attempts left; nil if unknown.
    func reserveCheckAttempt(sessionID: String) async throws -> CodeCheckStateMachine.Reservation?
    /// Marks the session consumed and closes the number's other open sessions of the same purpose (a
    /// resend leaves older codes valid until one of them signs in); false when the session was consumed
    /// or closed first.
    func consumeSession(id: String, at: Date) async throws -> Bool
    /// Deletes at most `limit` sessions that expired before `date`, the longest expired first, in one
    /// statement (housekeeping paces these, `PurgePacing`); returns how many.
    func purgeSessions(expiredBefore date: Date, limit: Int) async throws -> Int
    /// The newest unconsumed sign-in session for a number (reentrant sends).
    func latestOpenSession(projectID: String, phoneNumber: String) async throws -> VerificationSession?
    /// Open phone sessions of a project (devMode `verificationCodes`).
    func openSessions(projectID: String, now: Date) async throws -> [VerificationSession]
}

/// Accounts and refresh tokens. Writes that would duplicate an email, phone number or localId in a
/// project throw `AccountConflict`.
public protocol AccountStore: Sendable {
    /// The user owning `phoneNumber` in `projectID`, created if there is none; `created` tells which.
    /// `proven` (a real SMS code signed in) marks the number proven; it is never unmarked here.
    func findOrCreateUser(projectID: String, phoneNumber: String, proven: Bool, now: Date) async throws -> (user: UserAccount, created: Bool)
    func user(projectID: String, localID: String) async throws -> UserAccount?
    func user(projectID: String, email: String) async throws -> UserAccount?
    func user(projectID: String, phoneNumber: String) async throws -> UserAccount?
    /// True when the user whose first factor is `phoneNumber` has a second factor enrolled (such a
    /// number gets no sign-in code: UNSUPPORTED_FIRST_FACTOR). Sends ask it inside their admission
    /// (`SendAdmission.refuseSecondFactorHolders`); test numbers, which have none, ask here.
    func hasSecondFactor(projectID: String, phoneNumber: String) async throws -> Bool
    /// The user an identity-provider account is linked to.
    func user(projectID: String, providerID: String, federatedID: String) async throws -> UserAccount?
    /// Up to `limit` users with localId after `after`, in localId order (admin batchGet paging).
    func users(projectID: String, after: String?, limit: Int) async throws -> [UserAccount]
    /// Inserts the user with its linked identities, in one transaction.
    func insertUser(_ user: UserAccount) async throws
    /// Writes every column of the user (not its second factors or identities).
    func updateUser(_ user: UserAccount) async throws
    /// Links `identity` to the user, or refreshes what it says when it is linked to that user already;
    /// `AccountConflict.federatedIDExists` when another user has it, `.providerAlreadyLinked` when the
    /// user has another account of the provider.
    func linkIdentity(_ identity: FederatedIdentity, projectID: String, localID: String) async throws
    /// False when the user had no identity of that provider.
    func unlinkIdentity(projectID: String, localID: String, providerID: String) async throws -> Bool
    /// Deletes the user, its second factors, identities and refresh tokens; false when there was none.
    func deleteUser(projectID: String, localID: String) async throws -> Bool
    /// Deletes every user of a project (devMode `DELETE /emulator/v1/projects/{p}/accounts`); returns how many.
    func deleteAllUsers(projectID: String) async throws -> Int
    func addMFAEnrollment(_ enrollment: MFAEnrollment, projectID: String, localID: String) async throws
    /// False when the user had no such enrollment.
    func removeMFAEnrollment(projectID: String, localID: String, enrollmentID: String) async throws -> Bool
    func insertRefreshToken(_ record: RefreshTokenRecord) async throws
    func refreshToken(hash: String) async throws -> RefreshTokenRecord?
}

/// Email action codes (`sendOobCode` → `signInWithEmailLink`).
public protocol OobCodeStore: Sendable {
    func insertOobCode(_ record: OobRecord) async throws
    func oobCode(hash: String) async throws -> OobRecord?
    func deleteOobCode(hash: String) async throws
    /// Marks the code used; false when it was used already (two clicks racing).
    func consumeOobCode(hash: String, at date: Date) async throws -> Bool
    /// Unused, unexpired codes of a project (devMode `oobCodes`).
    func openOobCodes(projectID: String, now: Date) async throws -> [OobRecord]
    /// Deletes at most `limit` codes that expired before `date`, the longest expired first, in one
    /// statement; returns how many.
    func purgeOobCodes(expiredBefore date: Date, limit: Int) async throws -> Int
}

/// The delivery ledger: one row per job id, the idempotency record that keeps redelivered jobs
/// from being sent twice, and each message's history for operators (`MessageLedger`).
public protocol DeliveryLedger: Sendable {
    /// Records a job the API is about to publish, or a worker received from a foreign `producer`
    /// (nothing when the row exists: a redelivered or republished copy). False when the row exists and
    /// was recorded for another producer (herald-api's own jobs have none): a job id belongs to whoever
    /// recorded it first, so a foreign producer cannot take over a pending verification job.
    @discardableResult
    func recordPending(jobID: UUID, projectID: String, type: JobType, destination: String, producer: String?, now: Date) async throws -> Bool
    /// Records a herald-api job whose id is derived from what it does, so that it is queued once: nil
    /// when this call recorded it, else the status of the row already there (nothing changes then).
    func recordPendingOnce(jobID: UUID, projectID: String, type: JobType, destination: String, now: Date) async throws -> DeliveryStatus?
    /// Claims a job for sending (from pending, retrying or throttled) when its row exists and names the
    /// same project, type, destination and producer (`description.producer`, nil for herald-api's own
    /// jobs; else `.unknown` or `.mismatch`); with `reclaimInDoubt`, also
    /// one another worker claimed and never finished (risks a duplicate). A claim keeps `description`
    /// on the row and adds a `sending` event.
    func claimDelivery(
        jobID: UUID, projectID: String, type: JobType, destination: String, owner: String, description: DeliveryDescription, now: Date,
        reclaimInDoubt: Bool
    ) async throws -> DeliveryClaim
    /// Records where the job ended up (or that it waits for a retry or a throttle), with a reason for
    /// operators, the provider's message id when it gave one and, for a sent SMS, how it was encoded
    /// (nil keeps what is recorded); adds an event with `detail` (nil: the reason).
    func recordDelivery(
        jobID: UUID, status: DeliveryStatus, reason: String?, segments: SMSSegments?, providerMessageID: String?, detail: String?, now: Date
    ) async throws
    /// Adds an event without changing the status (a skipped duplicate).
    func noteDelivery(jobID: UUID, status: MessageStatus, detail: String?, now: Date) async throws
    /// Keeps the job of a message about to be recorded `uncertain`, so an operator can resend it.
    func keepUncertainJob(jobID: UUID, body: Data) async throws
    /// The current status and reason of a job, if known.
    func deliveryStatus(jobID: UUID) async throws -> (status: DeliveryStatus, reason: String?, attempts: Int)?
}

extension DeliveryLedger {
    /// Records a job herald-api is about to publish.
    public func recordPending(jobID: UUID, projectID: String, type: JobType, destination: String, now: Date) async throws {
        try await recordPending(jobID: jobID, projectID: projectID, type: type, destination: destination, producer: nil, now: now)
    }

    /// Records an outcome that carries no segments.
    public func recordDelivery(jobID: UUID, status: DeliveryStatus, reason: String?, now: Date) async throws {
        try await recordDelivery(jobID: jobID, status: status, reason: reason, segments: nil, providerMessageID: nil, detail: nil, now: now)
    }

    /// Records an outcome without a provider message id; the event's detail is the reason.
    public func recordDelivery(jobID: UUID, status: DeliveryStatus, reason: String?, segments: SMSSegments?, now: Date) async throws {
        try await recordDelivery(
            jobID: jobID, status: status, reason: reason, segments: segments, providerMessageID: nil, detail: nil, now: now)
    }

    /// Claims with nothing to describe (tests, and callers that know no more than the ledger).
    public func claimDelivery(
        jobID: UUID, projectID: String, type: JobType, destination: String, owner: String, now: Date, reclaimInDoubt: Bool
    ) async throws -> DeliveryClaim {
        try await claimDelivery(
            jobID: jobID, projectID: projectID, type: type, destination: destination, owner: owner, description: DeliveryDescription(),
            now: now, reclaimInDoubt: reclaimInDoubt)
    }
}

/// The ledger as operators read it: one message, a filtered listing newest first, and the purge after
/// `ledger.retention`.
public protocol MessageLedger: Sendable {
    func message(id: UUID) async throws -> MessageRecord?
    func messages(_ query: MessageQuery) async throws -> MessagePage
    /// Deletes up to `limit` rows last changed before `date`; returns how many (call again while it
    /// returns `limit`: short transactions, never one that holds the table).
    func purgeMessages(updatedBefore date: Date, limit: Int) async throws -> Int
    /// When the oldest job of `type` still waiting to be sent (queued or throttled) was created.
    func oldestWaiting(type: JobType) async throws -> Date?
    /// A provider's delivery receipt for an SMS that went out (sending, sent or uncertain): `delivered`
    /// or `undelivered` with the provider's error code, and the provider's message id when the row has
    /// none yet. The first final status stays: a later receipt that says otherwise is only an event
    /// (`.late`), and one that says the same changes nothing (`.repeated`), so neither a provider's
    /// retries nor a replayed receipt can rewrite what an operator or a bill was told.
    ///
    /// `status` is `delivered`, `undelivered`, or `failed` (a fraud block the provider reports after
    /// accepting the message). `segment` names the segment a receipt is for, at providers that report
    /// each segment of a long SMS apart (Vonage): the message is delivered once every segment the worker
    /// recorded has been, and undelivered at the first that is not.
    func applyReceipt(
        jobID: UUID, status: DeliveryStatus, segment: String?, providerMessageID: String?, errorCode: String?, now: Date
    ) async throws -> ReceiptResult
    /// The kept job of an `uncertain` message (nil when it is not uncertain or nothing was kept).
    func uncertainJob(jobID: UUID) async throws -> Data?
    /// An operator's decision on an `uncertain` message, taken once: `sent` (the provider confirms it
    /// went out) or `resend` (back to queued, for the caller to publish again). False when the message
    /// is not uncertain (any more). Either way the kept job is dropped.
    func resolveUncertain(jobID: UUID, resolution: UncertainResolution, decidedBy: String, now: Date) async throws -> Bool
}

/// What an operator decided about a message in doubt.
public enum UncertainResolution: String, Sendable {
    case sent, resend
}

extension MessageLedger {
    /// A receipt for the whole message (the generic gateway's).
    public func applyReceipt(jobID: UUID, delivered: Bool, providerMessageID: String?, errorCode: String?, now: Date) async throws -> ReceiptResult {
        try await applyReceipt(
            jobID: jobID, status: delivered ? .delivered : .undelivered, segment: nil, providerMessageID: providerMessageID, errorCode: errorCode,
            now: now)
    }
}

/// What a delivery receipt did.
public enum ReceiptResult: Sendable, Equatable {
    /// The message moved; its destination is for the per-country count.
    case applied(destination: String)
    /// The message already had its final status, which stays; this receipt, which says otherwise, is
    /// kept as an event.
    case late(final: DeliveryStatus)
    /// The message already has the status this receipt reports: nothing changed.
    case repeated(DeliveryStatus)
    /// The ledger has the job, but it never went out (still queued, or failed, expired, dead).
    case notSent(DeliveryStatus)
    /// No such SMS job in the ledger (never issued, purged, or another type).
    case unknown
    /// One more segment of a long SMS was delivered; the message waits for the rest.
    case partial(delivered: Int, of: Int)

    /// Statuses a receipt may change.
    public static let receivable: [DeliveryStatus] = [.sending, .sent, .uncertain]
    /// Statuses only a receipt gives, and that no later receipt changes.
    public static let final: [DeliveryStatus] = [.delivered, .undelivered]
}

/// Everything the API and workers keep in the shared store.
public typealias HeraldStoreProtocol = VerificationStore & AccountStore & DeliveryLedger & MessageLedger & RateLimitStore
    & AppVerificationStore & OobCodeStore & SendAdmissionStore & CredentialReplayStore & StoreHealth & TurnStore & AdminSessionStore
    & BreakerStore

/// Named turns that one process at a time holds among all those sharing a store, for work that every
/// process would otherwise repeat (`HousekeepingTurn`). A turn is held until an instant and renewed
/// before it; a holder that stops renewing (it died, or lost the store) loses it once that passes.
public protocol TurnStore: Sendable {
    /// Takes the turn `name` for `holder` until `until` (ms since 1970), in one statement, when nobody
    /// holds it, its holder's time passed before `now`, or `holder` already holds it (a renewal). True
    /// when `holder` holds it afterwards.
    func takeTurn(_ name: String, holder: String, until: Int64, now: Int64) async throws -> Bool
    /// Gives the turn up when `holder` holds it (a process stopping), so another takes it at its next try.
    func endTurn(_ name: String, holder: String) async throws
    /// Who holds the turn and until when (ms), whether or not that time has passed; nil when nobody
    /// took it yet or the last holder gave it up.
    func turnHolder(_ name: String) async throws -> (holder: String, until: Int64)?
}

/// What the store's own engine tells operators about it.
public protocol StoreHealth: Sendable {
    /// The oldest snapshot another connection holds on the store's database, nil when none holds one
    /// (and always on SQLite, where readers hold nothing back). On PostgreSQL every row Herald updates
    /// keeps its old versions while any snapshot older than them lives, and the rows every send updates
    /// (project, country and client-address limits, a prefix's velocity) then grow a longer chain with
    /// each send: a `pg_dump` or a transaction left open slows every admission down.
    func oldestSnapshot() async throws -> SnapshotHolder?
}

/// A connection holding a snapshot: how long its transaction (or statement) has run, who it is.
public struct SnapshotHolder: Sendable, Equatable {
    public var seconds: Double
    /// `application_name`, or the backend's type when it has none (a walsender for a replica with
    /// `hot_standby_feedback`).
    public var application: String
    public var state: String
    public var pid: Int

    public init(seconds: Double, application: String, state: String, pid: Int) {
        self.seconds = seconds
        self.application = application
        self.state = state
        self.pid = pid
    }
}

/// The status page's login sessions, by the hash of their cookie's secret, where every API process sees
/// them: ending one (logout) ends it for every copy of its cookie.
/// A provider's circuit breaker as the shared store keeps it, with the version a writer must still
/// find to replace it.
public struct StoredBreaker: Sendable, Equatable {
    public var snapshot: CircuitBreaker.Snapshot
    public var version: Int64
    public var updatedAt: Date

    public init(snapshot: CircuitBreaker.Snapshot, version: Int64, updatedAt: Date) {
        self.snapshot = snapshot
        self.version = version
        self.updatedAt = updatedAt
    }
}

/// Every sms worker's view of each provider's breaker (`CircuitBreaker`), kept in the store so that
/// one worker's failures open it for all, and an operator's override reaches every worker. Writes
/// compare versions (no lock held across the change): a writer that lost the race reads again.
public protocol BreakerStore: Sendable {
    func breaker(provider: String) async throws -> StoredBreaker?
    /// Writes `snapshot` when the row's version is still `expected` (nil: there is no row yet); false
    /// when another writer came first.
    func replaceBreaker(provider: String, snapshot: CircuitBreaker.Snapshot, expected: Int64?, now: Date) async throws -> Bool
    /// Every provider's breaker, by name.
    func breakers() async throws -> [String: StoredBreaker]
}

extension BreakerStore {
    /// Applies `change` to the provider's stored breaker (a closed one when there is none) and writes
    /// it back, again from a fresh read when another writer came first. Returns what `change`
    /// returned and the breaker as written.
    public func updateBreaker<T: Sendable>(
        provider: String, settings: CircuitBreaker.Settings, now: Date, _ change: (inout CircuitBreaker) -> T
    ) async throws -> (result: T, breaker: CircuitBreaker) {
        while true {
            let stored = try await breaker(provider: provider)
            var breaker = stored.map { CircuitBreaker(settings: settings, snapshot: $0.snapshot) } ?? CircuitBreaker(settings: settings, now: now)
            let result = change(&breaker)
            if try await replaceBreaker(provider: provider, snapshot: breaker.snapshot, expected: stored?.version, now: now) {
                return (result, breaker)
            }
        }
    }
}

public protocol AdminSessionStore: Sendable {
    func insertAdminSession(hash: String, keyID: String, expiresAt: Date) async throws
    /// The key id of the admin token that opened the session, while it exists and is unexpired at `now`.
    func adminSession(hash: String, now: Date) async throws -> String?
    /// Ends the session; false when there was none.
    func deleteAdminSession(hash: String) async throws -> Bool
    /// Forgets at most `limit` sessions that expired before `date`, in one statement; returns how many.
    func purgeAdminSessions(expiredBefore date: Date, limit: Int) async throws -> Int
}

/// Identity-provider credentials already used (Apple identity tokens are single-use), kept by hash
/// until they expire, where every API process sees them.
public protocol CredentialReplayStore: Sendable {
    /// Records the credential as used; false when it was used before.
    func spendCredential(hash: String, projectID: String, expiresAt: Date) async throws -> Bool
    /// Forgets at most `limit` credentials that expired before `date` (a replay of those fails on
    /// expiry), the longest expired first, in one statement; returns how many.
    func purgeCredentials(expiredBefore date: Date, limit: Int) async throws -> Int
}

/// Shared rate-limit state: one GCRA timestamp per key, prefix velocity and blocks. Every API and
/// worker process on the same store sees the same counts, so N replicas do not allow N times a limit.
public protocol RateLimitStore: Sendable {
    /// One GCRA decision in one atomic statement: spends the event when allowed, writes nothing when not.
    func rateDecision(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> GCRA.Decision
    /// Several decisions in one write transaction, in order, all-or-nothing: at the first refusal the
    /// events already spent are given back before the transaction commits. Returns the index of the
    /// refusing entry and its decision, or nil when all allowed.
    func rateDecisions(_ entries: [(key: String, parameters: GCRA.Parameters)], now: Int64) async throws -> (index: Int, decision: GCRA.Decision)?
    /// Reserves the next slot under `key` even when it lies in the future, in one atomic statement:
    /// the TAT always advances, and the answer is the instant (µs) the event may happen. A worker waits
    /// for its reserved slot instead of asking again and again (per-number spacing).
    func rateReserve(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> Int64
    /// Gives back one event spent under `key` (a later check refused the request, or publishing failed).
    func rateRefund(key: String, parameters: GCRA.Parameters, now: Int64) async throws
    /// Stored keys of `kind` for `subject` (in `project`, or every project), with their TATs.
    func rateStates(kind: String, subject: String, project: String?) async throws -> [(key: String, tat: Int64)]
    /// Forgets those keys; returns how many.
    func resetRates(kind: String, subject: String, project: String?) async throws -> Int
    /// One step of housekeeping's walk of the keys (`RateKeySweep`): looks at up to `limit` keys after
    /// `key` in key order, in one short transaction, and deletes those whose TAT passed before `now`
    /// (they allow as much as a missing key).
    func purgeRates(after key: String, limit: Int, before now: Int64) async throws -> RateKeyChunk
    /// Counts a send to `prefix` and, when its velocity trips, blocks it; true when it tripped now.
    func observePrefix(projectID: String, prefix: String, settings: PrefixVelocity.Settings, now: Date) async throws -> Bool
    /// The active block covering `prefix`, if any.
    func prefixBlock(projectID: String, prefix: String, now: Date) async throws -> PrefixBlock?
    /// Active blocks.
    func prefixBlocks(now: Date) async throws -> [PrefixBlock]
    /// Removes a block (and resets the prefix's velocity); false when there was none.
    func liftPrefixBlock(projectID: String, prefix: String) async throws -> Bool
    /// Per minute and region since `since`, by the sessions' creation: codes sent by SMS and codes
    /// verified (test numbers excluded). `ConversionWindow` keeps the hour from these. Counts sessions
    /// whose ids `SessionToken` issued (they start with the creation time).
    func conversion(since: Date) async throws -> [ConversionCount]
}

/// What one step of the limit keys' walk did.
public struct RateKeyChunk: Sendable, Equatable {
    /// Keys looked at; fewer than the step's limit when it reached the last key.
    public var walked: Int
    /// Of those, the ones deleted.
    public var deleted: Int
    /// The last key looked at (where the next step starts); nil when none followed.
    public var last: String?

    public init(walked: Int, deleted: Int, last: String?) {
        self.walked = walked
        self.deleted = deleted
        self.last = last
    }
}

extension RateLimitStore {
    /// Walks every key now, `chunk` at a time back to back, deleting those whose TAT passed before
    /// `now`; returns how many. For tools and tests: housekeeping spreads its walks (`RateKeySweep`).
    public func purgeRates(before now: Int64, chunk: Int = PurgePacing.rateKeys.chunk) async throws -> Int {
        var after = ""
        var deleted = 0
        while true {
            let step = try await purgeRates(after: after, limit: chunk, before: now)
            deleted += step.deleted
            guard step.walked >= chunk, let last = step.last else { return deleted }
            after = last
        }
    }
}

/// App-verification state: receipts `verifyClient` issued and device tokens APNs rejected.
public protocol AppVerificationStore: Sendable {
    func insertReceipt(_ receipt: AppReceipt) async throws
    func receipt(hash: String) async throws -> AppReceipt?
    func deleteReceipt(hash: String) async throws
    /// Deletes at most `limit` receipts issued before `date`, the oldest first, in one statement;
    /// returns how many.
    func purgeReceipts(issuedBefore date: Date, limit: Int) async throws -> Int
    /// Remembers that APNs refused a token for good (410 Unregistered, BadDeviceToken …).
    func markDeviceTokenInvalid(hash: String, reason: String, since: Date) async throws
    /// Why a token was refused, if it was.
    func invalidDeviceToken(hash: String) async throws -> String?
}
