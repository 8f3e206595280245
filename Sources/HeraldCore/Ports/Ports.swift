import Foundation

/// Publishes a job durably. Returns only once the broker has confirmed it (persistent, routed);
/// throws when it could not, in which case the job must be treated as never sent.
public protocol JobPublisher: Sendable {
    /// `traceparent` (W3C) links the job to the request that caused it.
    func publish(_ job: Job, traceparent: TraceParent) async throws
}

/// Sends one message through one provider and says what happened. Implementations never throw for
/// provider answers; every answer maps to a `DeliveryOutcome`.
public protocol DeliveryChannel: Sendable {
    /// A short provider name for logs and metrics (`http`, `console`).
    var name: String { get }
    func deliver(_ message: OutgoingSMS) async -> DeliveryOutcome
}

/// A rendered SMS, ready for a provider.
public struct OutgoingSMS: Sendable, Equatable {
    public var jobID: UUID
    public var project: String
    public var to: String
    public var body: String
    public var expiresAt: Date

    public init(jobID: UUID, project: String, to: String, body: String, expiresAt: Date) {
        self.jobID = jobID
        self.project = project
        self.to = to
        self.body = body
        self.expiresAt = expiresAt
    }
}

/// A signed-in user, as much of the Identity Toolkit account as phone sign-in needs.
public struct UserAccount: Sendable, Equatable {
    /// 28 alphanumerics, Firebase's localId shape.
    public var localID: String
    public var projectID: String
    public var phoneNumber: String?
    public var createdAt: Date
    public var lastLoginAt: Date
    /// Tokens issued before this instant are revoked.
    public var validSince: Date?
    public var disabled: Bool

    public init(
        localID: String, projectID: String, phoneNumber: String?, createdAt: Date, lastLoginAt: Date,
        validSince: Date? = nil, disabled: Bool = false
    ) {
        self.localID = localID
        self.projectID = projectID
        self.phoneNumber = phoneNumber
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.validSince = validSince
        self.disabled = disabled
    }
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
    /// Marks the session consumed; false when another request consumed it first.
    func consumeSession(id: String, at: Date) async throws -> Bool
    /// Deletes sessions that expired before `date`; returns how many.
    func purgeSessions(expiredBefore date: Date) async throws -> Int
    /// The newest unconsumed session for a number (reentrant sends).
    func latestOpenSession(projectID: String, phoneNumber: String) async throws -> VerificationSession?
    /// Ends every open session of a number except `keeping` (a new code was sent).
    func invalidateSessions(projectID: String, phoneNumber: String, keeping: String, at date: Date) async throws
}

/// Accounts and refresh tokens.
public protocol AccountStore: Sendable {
    /// The user owning `phoneNumber` in `projectID`, created if there is none; `created` tells which.
    func findOrCreateUser(projectID: String, phoneNumber: String, now: Date) async throws -> (user: UserAccount, created: Bool)
    func user(projectID: String, localID: String) async throws -> UserAccount?
    func insertRefreshToken(_ record: RefreshTokenRecord) async throws
    func refreshToken(hash: String) async throws -> RefreshTokenRecord?
}

/// The delivery ledger: one row per job id, the idempotency record that keeps redelivered jobs
/// from being sent twice.
public protocol DeliveryLedger: Sendable {
    /// Records a job the API is about to publish.
    func recordPending(jobID: UUID, projectID: String, type: JobType, destination: String, now: Date) async throws
    /// Claims a job for sending (from pending or retrying, or unknown for foreign producers); with
    /// `reclaimInDoubt`, also one another worker claimed and never finished (risks a duplicate).
    func claimDelivery(
        jobID: UUID, projectID: String, type: JobType, destination: String, owner: String, now: Date, reclaimInDoubt: Bool
    ) async throws -> DeliveryClaim
    /// Records where the job ended up (or that it waits for a retry), with a reason for operators.
    func recordDelivery(jobID: UUID, status: DeliveryStatus, reason: String?, now: Date) async throws
    /// Records how a sent SMS was encoded.
    func recordSegments(jobID: UUID, segments: SMSSegments) async throws
    /// The current status and reason of a job, if known.
    func deliveryStatus(jobID: UUID) async throws -> (status: DeliveryStatus, reason: String?, attempts: Int)?
}

/// Everything the API and workers keep in the shared store.
public typealias HeraldStoreProtocol = VerificationStore & AccountStore & DeliveryLedger & RateLimitStore & AppVerificationStore

/// Shared rate-limit state: one GCRA timestamp per key, prefix velocity and blocks. Every API and
/// worker process on the same store sees the same counts, so N replicas do not allow N times a limit.
public protocol RateLimitStore: Sendable {
    /// One GCRA decision in one atomic statement: spends the event when allowed, writes nothing when not.
    func rateDecision(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> GCRA.Decision
    /// Several decisions in one write transaction, in order, all-or-nothing: at the first refusal the
    /// events already spent are given back before the transaction commits. Returns the index of the
    /// refusing entry and its decision, or nil when all allowed.
    func rateDecisions(_ entries: [(key: String, parameters: GCRA.Parameters)], now: Int64) async throws -> (index: Int, decision: GCRA.Decision)?
    /// Gives back one event spent under `key` (a later check refused the request, or publishing failed).
    func rateRefund(key: String, parameters: GCRA.Parameters, now: Int64) async throws
    /// Stored keys of `kind` for `subject` (in `project`, or every project), with their TATs.
    func rateStates(kind: String, subject: String, project: String?) async throws -> [(key: String, tat: Int64)]
    /// Forgets those keys; returns how many.
    func resetRates(kind: String, subject: String, project: String?) async throws -> Int
    /// Deletes keys whose TAT has passed (they allow as much as a missing key).
    func purgeRates(before now: Int64) async throws -> Int
    /// Counts a send to `prefix` and, when its velocity trips, blocks it; true when it tripped now.
    func observePrefix(projectID: String, prefix: String, settings: PrefixVelocity.Settings, now: Date) async throws -> Bool
    /// The active block covering `prefix`, if any.
    func prefixBlock(projectID: String, prefix: String, now: Date) async throws -> PrefixBlock?
    /// Active blocks.
    func prefixBlocks(now: Date) async throws -> [PrefixBlock]
    /// Removes a block (and resets the prefix's velocity); false when there was none.
    func liftPrefixBlock(projectID: String, prefix: String) async throws -> Bool
    /// Per region since `since`: codes sent by SMS and codes verified (test numbers excluded).
    func conversion(since: Date) async throws -> [(region: String, sent: Int, verified: Int)]
}

/// App-verification state: receipts `verifyClient` issued and device tokens APNs rejected.
public protocol AppVerificationStore: Sendable {
    func insertReceipt(_ receipt: AppReceipt) async throws
    func receipt(hash: String) async throws -> AppReceipt?
    func deleteReceipt(hash: String) async throws
    /// Deletes receipts issued before `date`; returns how many.
    func purgeReceipts(issuedBefore date: Date) async throws -> Int
    /// Remembers that APNs refused a token for good (410 Unregistered, BadDeviceToken …).
    func markDeviceTokenInvalid(hash: String, reason: String, since: Date) async throws
    /// Why a token was refused, if it was.
    func invalidDeviceToken(hash: String) async throws -> String?
}
