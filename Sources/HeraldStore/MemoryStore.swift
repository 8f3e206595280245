import Foundation
import HeraldCore
import Synchronization

/// Every store port in one process's memory, for tests that need no database (in-process API tests
/// through Hummingbird's router) and as the executable model the SQL stores are checked against: it
/// passes the same conformance suite. Each call is atomic under one lock; instants are kept to the
/// millisecond, as the SQL stores keep them.
public final class MemoryStore: HeraldStoreProtocol {
    private struct Delivery {
        var record: MessageRecord
        var owner: String?
        var jobBody: Data?
        /// Segments of a long SMS reported delivered so far (`applyReceipt(segment:)`), comma-separated.
        var receiptSegments: String?

        init(jobID: UUID, projectID: String, type: JobType, destination: String, now: Date) {
            let now = now.keptToMilliseconds
            record = MessageRecord(
                id: jobID, project: projectID, type: type, destination: destination, template: nil, locale: nil, status: .pending, attempts: 0,
                provider: nil, providerMessageID: nil, producer: nil, segments: nil, encoding: nil, lastError: nil, createdAt: now,
                updatedAt: now, storedEvents: [])
        }
    }

    private struct State {
        var sessions: [String: VerificationSession] = [:]
        /// Sessions that signed in (the others of their number were only closed by it).
        var verifiedSessions: Set<String> = []
        /// Keyed by project, then localId.
        var users: [String: [String: UserAccount]] = [:]
        var refreshTokens: [String: RefreshTokenRecord] = [:]
        var oobCodes: [String: OobRecord] = [:]
        var deliveries: [UUID: Delivery] = [:]
        var rates: [String: Int64] = [:]
        var velocity: [String: PrefixVelocity] = [:]
        var blocks: [String: PrefixBlock] = [:]
        var receipts: [String: AppReceipt] = [:]
        var invalidTokens: [String: String] = [:]
        /// Spent identity-provider credentials: hash → expiry.
        var credentials: [String: Date] = [:]
        /// Status-page sessions: hash → (key id, expiry).
        var adminSessions: [String: (keyID: String, expiresAt: Date)] = [:]
        var breakers: [String: StoredBreaker] = [:]
        /// Turns: name → holder and until (ms).
        var turns: [String: (holder: String, until: Int64)] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    // MARK: VerificationStore

    public func insertSession(_ session: VerificationSession) async throws {
        try state.withLock { state in
            guard state.sessions[session.id] == nil else { throw StoreError(.unique("verification_sessions_pkey"), "session exists") }
            state.sessions[session.id] = session.keptToMilliseconds
        }
    }

    public func deleteSession(id: String) async throws {
        state.withLock { _ = $0.sessions.removeValue(forKey: id) }
    }

    public func reserveCheckAttempt(sessionID: String) async throws -> CodeCheckStateMachine.Reservation? {
        state.withLock { state in
            guard var session = state.sessions[sessionID] else { return nil }
            guard session.consumedAt == nil, session.attempts < session.maxAttempts else { return .init(session: session, reserved: false) }
            session.attempts += 1
            state.sessions[sessionID] = session
            return .init(session: session, reserved: true)
        }
    }

    public func consumeSession(id: String, at date: Date) async throws -> Bool {
        state.withLock { state in
            guard let consumed = state.sessions[id], consumed.consumedAt == nil else { return false }
            state.verifiedSessions.insert(id)
            for (other, session) in state.sessions
            where session.projectID == consumed.projectID && session.phoneNumber == consumed.phoneNumber && session.purpose == consumed.purpose
                && session.consumedAt == nil
            {
                state.sessions[other]?.consumedAt = date.keptToMilliseconds
            }
            return true
        }
    }

    /// The keys of at most `limit` of `rows` whose time is before `cutoff`, the oldest first: what one
    /// purge statement of the SQL stores deletes.
    static func oldest<Row, Key>(_ rows: some Sequence<Row>, before cutoff: Date, limit: Int, time: (Row) -> Date, key: (Row) -> Key) -> [Key] {
        rows.filter { time($0) < cutoff }.sorted { time($0) < time($1) }.prefix(max(1, limit)).map(key)
    }

    public func purgeSessions(expiredBefore date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let expired = Self.oldest(state.sessions.values, before: date.keptToMilliseconds, limit: limit, time: \.expiresAt, key: \.id)
            for id in expired {
                state.sessions.removeValue(forKey: id)
                state.verifiedSessions.remove(id)
            }
            return expired.count
        }
    }

    public func latestOpenSession(projectID: String, phoneNumber: String) async throws -> VerificationSession? {
        state.withLock { state in
            state.sessions.values.filter {
                $0.projectID == projectID && $0.phoneNumber == phoneNumber && $0.consumedAt == nil && $0.purpose == .signIn
            }.max { $0.createdAt < $1.createdAt }
        }
    }

    public func openSessions(projectID: String, now: Date) async throws -> [VerificationSession] {
        state.withLock { state in
            state.sessions.values.filter { $0.projectID == projectID && $0.consumedAt == nil && $0.expiresAt > now }
                .sorted { $0.createdAt < $1.createdAt }
        }
    }

    // MARK: AccountStore

    public func findOrCreateUser(projectID: String, phoneNumber: String, proven: Bool, now: Date) async throws -> (user: UserAccount, created: Bool) {
        state.withLock { state in
            if var user = state.users[projectID]?.values.first(where: { $0.phoneNumber == phoneNumber }) {
                user.lastLoginAt = now.keptToMilliseconds
                user.phoneProven = user.phoneProven || proven
                state.users[projectID]?[user.localID] = user
                return (user, false)
            }
            let user = UserAccount(
                localID: SecureRandom.alphanumeric(28), projectID: projectID, phoneNumber: phoneNumber, createdAt: now.keptToMilliseconds,
                lastLoginAt: now.keptToMilliseconds, phoneProven: proven)
            state.users[projectID, default: [:]][user.localID] = user
            return (user, true)
        }
    }

    public func user(projectID: String, localID: String) async throws -> UserAccount? {
        state.withLock { $0.users[projectID]?[localID] }
    }

    public func user(projectID: String, email: String) async throws -> UserAccount? {
        state.withLock { $0.users[projectID]?.values.first { $0.email == email.lowercased() } }
    }

    public func user(projectID: String, phoneNumber: String) async throws -> UserAccount? {
        state.withLock { $0.users[projectID]?.values.first { $0.phoneNumber == phoneNumber } }
    }

    public func users(projectID: String, after: String?, limit: Int) async throws -> [UserAccount] {
        state.withLock { state in
            Array(
                (state.users[projectID]?.values ?? [:].values).filter { $0.localID > (after ?? "") }.sorted { $0.localID < $1.localID }.prefix(limit))
        }
    }

    public func hasSecondFactor(projectID: String, phoneNumber: String) async throws -> Bool {
        state.withLock { Self.hasSecondFactor($0, projectID: projectID, phoneNumber: phoneNumber) }
    }

    private static func hasSecondFactor(_ state: State, projectID: String, phoneNumber: String) -> Bool {
        state.users[projectID]?.values.contains { $0.phoneNumber == phoneNumber && $0.mfaEnrollments.isEmpty == false } ?? false
    }

    public func user(projectID: String, providerID: String, federatedID: String) async throws -> UserAccount? {
        state.withLock { state in
            state.users[projectID]?.values.first { user in
                user.identities.contains { $0.providerID == providerID && $0.federatedID == federatedID }
            }
        }
    }

    public func insertUser(_ user: UserAccount) async throws {
        try state.withLock { state in
            guard state.users[user.projectID]?[user.localID] == nil else { throw AccountConflict.localIDExists }
            try Self.checkUnique(user, in: state)
            for identity in user.identities {
                if Self.owner(of: identity, projectID: user.projectID, in: state) != nil { throw AccountConflict.federatedIDExists }
            }
            if Set(user.identities.map(\.providerID)).count < user.identities.count { throw AccountConflict.providerAlreadyLinked }
            var stored = user.keptToMilliseconds
            stored.mfaEnrollments = []
            state.users[user.projectID, default: [:]][user.localID] = stored
        }
    }

    public func updateUser(_ user: UserAccount) async throws {
        try state.withLock { state in
            guard let current = state.users[user.projectID]?[user.localID] else { return }
            try Self.checkUnique(user, in: state)
            var stored = user.keptToMilliseconds
            stored.mfaEnrollments = current.mfaEnrollments
            stored.identities = current.identities
            state.users[user.projectID]?[user.localID] = stored
        }
    }

    /// The partial unique indexes of the SQL stores: one email and one phone number per project.
    private static func checkUnique(_ user: UserAccount, in state: State) throws {
        for other in state.users[user.projectID]?.values ?? [:].values where other.localID != user.localID {
            if let email = user.email?.lowercased(), other.email == email { throw AccountConflict.emailExists }
            if let phone = user.phoneNumber, other.phoneNumber == phone { throw AccountConflict.phoneNumberExists }
        }
    }

    public func linkIdentity(_ identity: FederatedIdentity, projectID: String, localID: String) async throws {
        try state.withLock { state in
            guard var user = state.users[projectID]?[localID] else { return }
            if let owner = Self.owner(of: identity, projectID: projectID, in: state), owner != localID { throw AccountConflict.federatedIDExists }
            if let index = user.identities.firstIndex(where: { $0.providerID == identity.providerID }) {
                let current = user.identities[index]
                guard current.federatedID == identity.federatedID else { throw AccountConflict.providerAlreadyLinked }
                var refreshed = identity.keptToMilliseconds
                refreshed.linkedAt = current.linkedAt
                refreshed.displayName = identity.displayName ?? current.displayName
                user.identities[index] = refreshed
            } else {
                user.identities.append(identity.keptToMilliseconds)
                user.identities.sort { ($0.linkedAt, $0.providerID) < ($1.linkedAt, $1.providerID) }
            }
            state.users[projectID]?[localID] = user
        }
    }

    public func unlinkIdentity(projectID: String, localID: String, providerID: String) async throws -> Bool {
        state.withLock { state in
            guard let index = state.users[projectID]?[localID]?.identities.firstIndex(where: { $0.providerID == providerID }) else {
                return false
            }
            state.users[projectID]?[localID]?.identities.remove(at: index)
            return true
        }
    }

    private static func owner(of identity: FederatedIdentity, projectID: String, in state: State) -> String? {
        state.users[projectID]?.values.first { user in
            user.identities.contains { $0.providerID == identity.providerID && $0.federatedID == identity.federatedID }
        }?.localID
    }

    // MARK: BreakerStore

    public func breaker(provider: String) async throws -> StoredBreaker? {
        state.withLock { $0.breakers[provider] }
    }

    public func replaceBreaker(provider: String, snapshot: CircuitBreaker.Snapshot, expected: Int64?, now: Date) async throws -> Bool {
        state.withLock { state in
            guard state.breakers[provider]?.version == expected else { return false }
            state.breakers[provider] = StoredBreaker(snapshot: snapshot, version: (expected ?? 0) + 1, updatedAt: now.keptToMilliseconds)
            return true
        }
    }

    public func breakers() async throws -> [String: StoredBreaker] {
        state.withLock { $0.breakers }
    }

    // MARK: AdminSessionStore

    public func insertAdminSession(hash: String, keyID: String, expiresAt: Date) async throws {
        state.withLock { $0.adminSessions[hash] = (keyID, expiresAt.keptToMilliseconds) }
    }

    public func adminSession(hash: String, now: Date) async throws -> String? {
        state.withLock { state in
            guard let session = state.adminSessions[hash], session.expiresAt > now else { return nil }
            return session.keyID
        }
    }

    public func deleteAdminSession(hash: String) async throws -> Bool {
        state.withLock { $0.adminSessions.removeValue(forKey: hash) != nil }
    }

    public func purgeAdminSessions(expiredBefore date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let expired = Self.oldest(state.adminSessions, before: date, limit: limit, time: { $0.value.expiresAt }, key: { $0.key })
            for hash in expired { state.adminSessions.removeValue(forKey: hash) }
            return expired.count
        }
    }

    // MARK: CredentialReplayStore

    public func spendCredential(hash: String, projectID: String, expiresAt: Date) async throws -> Bool {
        state.withLock { state in
            guard state.credentials[hash] == nil else { return false }
            state.credentials[hash] = expiresAt.keptToMilliseconds
            return true
        }
    }

    public func purgeCredentials(expiredBefore date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let expired = Self.oldest(state.credentials, before: date, limit: limit, time: { $0.value }, key: { $0.key })
            for hash in expired { state.credentials.removeValue(forKey: hash) }
            return expired.count
        }
    }

    public func deleteUser(projectID: String, localID: String) async throws -> Bool {
        state.withLock { state in
            state.refreshTokens = state.refreshTokens.filter { !($0.value.projectID == projectID && $0.value.localID == localID) }
            return state.users[projectID]?.removeValue(forKey: localID) != nil
        }
    }

    public func deleteAllUsers(projectID: String) async throws -> Int {
        state.withLock { state in
            state.refreshTokens = state.refreshTokens.filter { $0.value.projectID != projectID }
            return state.users.removeValue(forKey: projectID)?.count ?? 0
        }
    }

    public func addMFAEnrollment(_ enrollment: MFAEnrollment, projectID: String, localID: String) async throws {
        try state.withLock { state in
            guard state.users[projectID]?[localID]?.mfaEnrollments.contains(where: { $0.enrollmentID == enrollment.enrollmentID }) != true else {
                throw StoreError(.unique("mfa_enrollments_pkey"), "enrollment exists")
            }
            var stored = enrollment
            stored.enrolledAt = enrollment.enrolledAt.keptToMilliseconds
            state.users[projectID]?[localID]?.mfaEnrollments.append(stored)
            state.users[projectID]?[localID]?.mfaEnrollments.sort { ($0.enrolledAt, $0.enrollmentID) < ($1.enrolledAt, $1.enrollmentID) }
        }
    }

    public func removeMFAEnrollment(projectID: String, localID: String, enrollmentID: String) async throws -> Bool {
        state.withLock { state in
            guard let index = state.users[projectID]?[localID]?.mfaEnrollments.firstIndex(where: { $0.enrollmentID == enrollmentID }) else {
                return false
            }
            state.users[projectID]?[localID]?.mfaEnrollments.remove(at: index)
            return true
        }
    }

    public func insertRefreshToken(_ record: RefreshTokenRecord) async throws {
        try state.withLock { state in
            guard state.refreshTokens[record.tokenHash] == nil else { throw StoreError(.unique("refresh_tokens_pkey"), "token exists") }
            var stored = record
            stored.createdAt = record.createdAt.keptToMilliseconds
            state.refreshTokens[record.tokenHash] = stored
        }
    }

    public func refreshToken(hash: String) async throws -> RefreshTokenRecord? {
        state.withLock { $0.refreshTokens[hash] }
    }

    // MARK: OobCodeStore

    public func insertOobCode(_ record: OobRecord) async throws {
        try state.withLock { state in
            guard state.oobCodes[record.codeHash] == nil else { throw StoreError(.unique("oob_codes_pkey"), "code exists") }
            var stored = record
            stored.createdAt = record.createdAt.keptToMilliseconds
            stored.expiresAt = record.expiresAt.keptToMilliseconds
            stored.consumedAt = record.consumedAt?.keptToMilliseconds
            state.oobCodes[record.codeHash] = stored
        }
    }

    public func oobCode(hash: String) async throws -> OobRecord? {
        state.withLock { $0.oobCodes[hash] }
    }

    public func deleteOobCode(hash: String) async throws {
        state.withLock { _ = $0.oobCodes.removeValue(forKey: hash) }
    }

    public func consumeOobCode(hash: String, at date: Date) async throws -> Bool {
        state.withLock { state in
            guard state.oobCodes[hash] != nil, state.oobCodes[hash]?.consumedAt == nil else { return false }
            state.oobCodes[hash]?.consumedAt = date.keptToMilliseconds
            return true
        }
    }

    public func openOobCodes(projectID: String, now: Date) async throws -> [OobRecord] {
        state.withLock { state in
            state.oobCodes.values.filter { $0.projectID == projectID && $0.consumedAt == nil && $0.expiresAt > now }
                .sorted { $0.createdAt < $1.createdAt }
        }
    }

    public func purgeOobCodes(expiredBefore date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let expired = Self.oldest(state.oobCodes.values, before: date.keptToMilliseconds, limit: limit, time: \.expiresAt, key: \.codeHash)
            for hash in expired { state.oobCodes.removeValue(forKey: hash) }
            return expired.count
        }
    }

    // MARK: SendAdmissionStore

    public func admitSend(_ send: SendAdmission) async throws -> SendAdmission.Verdict {
        let session = send.session
        let micros = send.now.microsecondsSince1970
        return try state.withLock { state in
            // All or nothing, as the SQL transaction: the one write that can fail is checked before any other.
            guard state.sessions[session.id] == nil else { throw StoreError(.unique("verification_sessions_pkey"), "session exists") }
            if send.refuseSecondFactorHolders, Self.hasSecondFactor(state, projectID: session.projectID, phoneNumber: session.phoneNumber) {
                return .secondFactorHolder
            }
            let prefixKey = "\(session.projectID)\u{0}\(send.prefix)"
            if let block = state.blocks[prefixKey], block.until > send.now { return .blocked(block) }
            let entries = send.rateEntries
            if let refusal = Self.decide(&state, entries, now: micros) { return .refused(index: refusal.index, decision: refusal.decision) }
            if let pumping = send.pumping, Self.observe(&state, projectID: session.projectID, prefix: send.prefix, settings: pumping, now: micros) {
                for entry in entries { Self.refund(&state, key: entry.key, parameters: entry.parameters, now: micros) }
                return .tripped
            }
            state.sessions[session.id] = session.keptToMilliseconds
            if let jobID = session.jobID, state.deliveries[jobID] == nil {
                state.deliveries[jobID] = Delivery(
                    jobID: jobID, projectID: session.projectID, type: .sms, destination: session.phoneNumber, now: session.createdAt)
            }
            return .admitted
        }
    }

    // MARK: DeliveryLedger

    @discardableResult
    public func recordPending(jobID: UUID, projectID: String, type: JobType, destination: String, producer: String?, now: Date) async throws
        -> Bool
    {
        state.withLock { state in
            if let existing = state.deliveries[jobID] { return existing.record.producer == producer }
            var delivery = Delivery(jobID: jobID, projectID: projectID, type: type, destination: destination, now: now)
            delivery.record.producer = producer
            state.deliveries[jobID] = delivery
            return true
        }
    }

    public func recordPendingOnce(jobID: UUID, projectID: String, type: JobType, destination: String, now: Date) async throws
        -> DeliveryStatus?
    {
        state.withLock { state in
            if let existing = state.deliveries[jobID] { return existing.record.status }
            state.deliveries[jobID] = Delivery(jobID: jobID, projectID: projectID, type: type, destination: destination, now: now)
            return nil
        }
    }

    public func claimDelivery(
        jobID: UUID, projectID: String, type: JobType, destination: String, owner: String, description: DeliveryDescription, now: Date,
        reclaimInDoubt: Bool
    ) async throws -> DeliveryClaim {
        state.withLock { state in
            guard var delivery = state.deliveries[jobID] else { return .unknown }
            if delivery.record.project != projectID { return .mismatch(field: "project") }
            if delivery.record.type != type { return .mismatch(field: "type") }
            if delivery.record.destination != destination { return .mismatch(field: "to") }
            if delivery.record.producer != description.producer { return .mismatch(field: "producer") }
            switch delivery.record.status {
            case .pending, .retrying, .throttled: break
            case .sending where reclaimInDoubt: break
            case .sending: return .inDoubt(owner: delivery.owner ?? "unknown")
            default: return .finished(delivery.record.status)
            }
            delivery.owner = owner
            delivery.record.status = .sending
            delivery.record.attempts += 1
            delivery.record.updatedAt = now.keptToMilliseconds
            delivery.record.template = description.template ?? delivery.record.template
            delivery.record.locale = description.locale ?? delivery.record.locale
            delivery.record.provider = description.provider ?? delivery.record.provider
            delivery.record.storedEvents.append(
                MessageEvent(status: .sending, at: now.keptToMilliseconds, detail: "attempt \(delivery.record.attempts) by \(owner)"))
            state.deliveries[jobID] = delivery
            return .claimed(attempt: delivery.record.attempts)
        }
    }

    public func recordDelivery(
        jobID: UUID, status: DeliveryStatus, reason: String?, segments: SMSSegments?, providerMessageID: String?, detail: String?, now: Date
    ) async throws {
        state.withLock { state in
            guard var record = state.deliveries[jobID]?.record else { return }
            let final = record.status == .delivered || record.status == .undelivered
            if !final && (status != .uncertain || record.status == .sending) {
                record.status = status
                record.lastError = reason
            }
            record.updatedAt = now.keptToMilliseconds
            if let segments {
                record.segments = segments.segments
                record.encoding = segments.encoding.rawValue
            }
            record.providerMessageID = providerMessageID ?? record.providerMessageID
            record.storedEvents.append(Self.event(MessageStatus(status), now, detail ?? reason))
            state.deliveries[jobID]?.record = record
        }
    }

    public func noteDelivery(jobID: UUID, status: MessageStatus, detail: String?, now: Date) async throws {
        state.withLock { state in state.deliveries[jobID]?.record.storedEvents.append(Self.event(status, now, detail)) }
    }

    /// An event as the SQL stores keep it (their line format flattens and shortens the detail).
    private static func event(_ status: MessageStatus, _ now: Date, _ detail: String?) -> MessageEvent {
        MessageEvent.parse(MessageEvent(status: status, at: now, detail: detail).storedLine)[0]
    }

    public func deliveryStatus(jobID: UUID) async throws -> (status: DeliveryStatus, reason: String?, attempts: Int)? {
        state.withLock { state in state.deliveries[jobID].map { ($0.record.status, $0.record.lastError, $0.record.attempts) } }
    }

    // MARK: MessageLedger

    public func message(id: UUID) async throws -> MessageRecord? {
        state.withLock { state in state.deliveries[id]?.record }
    }

    public func messages(_ query: MessageQuery) async throws -> MessagePage {
        let key = { (record: MessageRecord) in (record.createdAt.millisecondsSince1970, record.id.lowercasedText) }
        let matching = state.withLock { state in
            state.deliveries.values.map(\.record).filter { record in
                (query.to.map { record.destination == $0 } ?? true) && (query.statuses.map { $0.contains(record.status) } ?? true)
                    && (query.type.map { record.type == $0 } ?? true) && (query.project.map { record.project == $0 } ?? true)
                    && (query.since.map { record.createdAt >= $0.keptToMilliseconds } ?? true)
                    && (query.after.map { key(record) < ($0.createdMs, $0.id) } ?? true)
            }
        }.sorted { key($0) > key($1) }
        let page = Array(matching.prefix(query.pageSize))
        let next = matching.count > query.pageSize ? page.last.map { MessageCursor(createdMs: key($0).0, id: key($0).1) } : nil
        return MessagePage(messages: page, next: next)
    }

    public func applyReceipt(
        jobID: UUID, status: DeliveryStatus, segment: String?, providerMessageID: String?, errorCode: String?, now: Date
    ) async throws -> ReceiptResult {
        let (status, reason, line) = SQLStore.receipt(status, errorCode: errorCode, now: now)
        return state.withLock { state in
            guard var delivery = state.deliveries[jobID], delivery.record.type == .sms else { return .unknown }
            var record = delivery.record
            guard ReceiptResult.receivable.contains(record.status) else {
                guard ReceiptResult.final.contains(record.status) else { return .notSent(record.status) }
                if record.status == status { return .repeated(status) }
                state.deliveries[jobID]?.record.storedEvents += MessageEvent.parse(
                    SQLStore.lateReceipt(status, final: record.status, errorCode: errorCode, now: now))
                return .late(final: record.status)
            }
            record.updatedAt = now.keptToMilliseconds
            if status == .delivered, let segment,
                let progress = SQLStore.segmentProgress(delivery.receiptSegments, adding: segment, of: record.segments.map(Int64.init))
            {
                delivery.receiptSegments = progress.list
                record.storedEvents += MessageEvent.parse(SQLStore.segmentEvent(progress.delivered, of: progress.total, now: now))
                delivery.record = record
                state.deliveries[jobID] = delivery
                return .partial(delivered: progress.delivered, of: progress.total)
            }
            record.status = status
            record.lastError = reason
            record.providerMessageID = record.providerMessageID ?? providerMessageID
            record.storedEvents += MessageEvent.parse(line)
            delivery.record = record
            state.deliveries[jobID] = delivery
            return .applied(destination: record.destination)
        }
    }

    public func keepUncertainJob(jobID: UUID, body: Data) async throws {
        state.withLock { state in state.deliveries[jobID]?.jobBody = body }
    }

    public func uncertainJob(jobID: UUID) async throws -> Data? {
        state.withLock { state in state.deliveries[jobID].flatMap { $0.record.status == .uncertain ? $0.jobBody : nil } }
    }

    public func resolveUncertain(jobID: UUID, resolution: UncertainResolution, decidedBy: String, now: Date) async throws -> Bool {
        let (status, line) = SQLStore.resolution(resolution, decidedBy: decidedBy, now: now)
        return state.withLock { state in
            guard var delivery = state.deliveries[jobID], delivery.record.status == .uncertain else { return false }
            delivery.record.status = status
            delivery.record.lastError = nil
            delivery.record.updatedAt = now.keptToMilliseconds
            delivery.record.storedEvents += MessageEvent.parse(line)
            delivery.jobBody = nil
            state.deliveries[jobID] = delivery
            return true
        }
    }

    public func oldestWaiting(type: JobType) async throws -> Date? {
        state.withLock { state in
            state.deliveries.values.map(\.record).filter { $0.type == type && [.pending, .retrying, .throttled].contains($0.status) }.map(\.createdAt)
                .min()
        }
    }

    public func purgeMessages(updatedBefore date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let cutoff = date.keptToMilliseconds
            let old = state.deliveries.values.map(\.record).filter { $0.createdAt < cutoff && $0.updatedAt < cutoff }
                .sorted { $0.createdAt < $1.createdAt }.prefix(max(1, limit))
            for record in old { state.deliveries[record.id] = nil }
            return old.count
        }
    }

    // MARK: RateLimitStore

    public func rateDecision(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> GCRA.Decision {
        state.withLock { Self.decide(&$0, key: key, parameters: parameters, now: now) }
    }

    public func rateDecisions(_ entries: [(key: String, parameters: GCRA.Parameters)], now: Int64) async throws -> (
        index: Int, decision: GCRA.Decision
    )? {
        state.withLock { Self.decide(&$0, entries, now: now) }
    }

    /// Every entry in order, all or nothing: at the first refusal the events spent before it are given back.
    private static func decide(_ state: inout State, _ entries: [(key: String, parameters: GCRA.Parameters)], now: Int64) -> (
        index: Int, decision: GCRA.Decision
    )? {
        for (index, entry) in entries.enumerated() {
            let decision = decide(&state, key: entry.key, parameters: entry.parameters, now: now)
            guard decision.allowed else {
                for spent in entries[..<index] { refund(&state, key: spent.key, parameters: spent.parameters, now: now) }
                return (index, decision)
            }
        }
        return nil
    }

    public func rateReserve(key: String, parameters: GCRA.Parameters, now: Int64) async throws -> Int64 {
        state.withLock { state in
            let reservation = GCRA.reserve(tat: state.rates[key], now: now, parameters: parameters)
            state.rates[key] = reservation.tat
            return reservation.slot
        }
    }

    public func rateRefund(key: String, parameters: GCRA.Parameters, now: Int64) async throws {
        state.withLock { Self.refund(&$0, key: key, parameters: parameters, now: now) }
    }

    private static func decide(_ state: inout State, key: String, parameters: GCRA.Parameters, now: Int64) -> GCRA.Decision {
        let decision = GCRA.decide(tat: state.rates[key], now: now, parameters: parameters)
        if decision.allowed { state.rates[key] = decision.tat }
        return decision
    }

    private static func refund(_ state: inout State, key: String, parameters: GCRA.Parameters, now: Int64) {
        guard let tat = state.rates[key] else { return }
        state.rates[key] = GCRA.refund(tat: tat, now: now, parameters: parameters)
    }

    public func rateStates(kind: String, subject: String, project: String?) async throws -> [(key: String, tat: Int64)] {
        state.withLock { Self.matching(kind: kind, subject: subject, project: project, in: $0) }
    }

    public func resetRates(kind: String, subject: String, project: String?) async throws -> Int {
        state.withLock { state in
            let keys = Self.matching(kind: kind, subject: subject, project: project, in: state).map(\.key)
            for key in keys { state.rates.removeValue(forKey: key) }
            return keys.count
        }
    }

    private static func matching(kind: String, subject: String, project: String?, in state: State) -> [(key: String, tat: Int64)] {
        state.rates.filter { key, _ in
            guard let parts = LimitCheck.parse(key) else { return false }
            return parts.kind == kind && parts.subject == subject && (project == nil || parts.project == project)
        }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    public func purgeRates(after key: String, limit: Int, before now: Int64) async throws -> RateKeyChunk {
        state.withLock { state in
            let walked = state.rates.keys.filter { $0 > key }.sorted().prefix(max(1, limit))
            let passed = walked.filter { (state.rates[$0] ?? now) < now }
            for key in passed { state.rates.removeValue(forKey: key) }
            return RateKeyChunk(walked: walked.count, deleted: passed.count, last: walked.last)
        }
    }

    public func observePrefix(projectID: String, prefix: String, settings: PrefixVelocity.Settings, now: Date) async throws -> Bool {
        state.withLock { Self.observe(&$0, projectID: projectID, prefix: prefix, settings: settings, now: now.microsecondsSince1970) }
    }

    private static func observe(_ state: inout State, projectID: String, prefix: String, settings: PrefixVelocity.Settings, now micros: Int64) -> Bool
    {
        let key = "\(projectID)\u{0}\(prefix)"
        let (next, trips) = PrefixVelocity.observe(state.velocity[key], now: micros, settings: settings)
        state.velocity[key] = next
        guard trips else { return false }
        state.blocks[key] = PrefixBlock(
            projectID: projectID, prefix: prefix, until: Date(microseconds: micros + settings.blockFor.microseconds),
            reason: PrefixBlock.reason(tripped: next, settings: settings), createdAt: Date(microseconds: micros))
        return true
    }

    public func prefixBlock(projectID: String, prefix: String, now: Date) async throws -> PrefixBlock? {
        state.withLock { state in state.blocks["\(projectID)\u{0}\(prefix)"].flatMap { $0.until > now ? $0 : nil } }
    }

    public func prefixBlocks(now: Date) async throws -> [PrefixBlock] {
        state.withLock { state in
            state.blocks.values.filter { $0.until > now }.sorted { ($0.projectID, $0.prefix) < ($1.projectID, $1.prefix) }
        }
    }

    public func liftPrefixBlock(projectID: String, prefix: String) async throws -> Bool {
        state.withLock { state in
            let key = "\(projectID)\u{0}\(prefix)"
            state.velocity.removeValue(forKey: key)
            return state.blocks.removeValue(forKey: key) != nil
        }
    }

    /// Nothing here holds anything back.
    public func oldestSnapshot() async throws -> SnapshotHolder? { nil }

    // MARK: TurnStore

    public func takeTurn(_ name: String, holder: String, until: Int64, now: Int64) async throws -> Bool {
        state.withLock { state in
            if let held = state.turns[name], held.holder != holder, held.until > now { return false }
            state.turns[name] = (holder, until)
            return true
        }
    }

    public func endTurn(_ name: String, holder: String) async throws {
        state.withLock { state in
            if state.turns[name]?.holder == holder { state.turns[name] = nil }
        }
    }

    public func turnHolder(_ name: String) async throws -> (holder: String, until: Int64)? {
        state.withLock { $0.turns[name] }
    }

    public func conversion(since: Date) async throws -> [ConversionCount] {
        state.withLock { state in
            var counts: [Int64: [ConversionRoute: ConversionCount]] = [:]
            for session in state.sessions.values
            where session.createdAt >= since.keptToMilliseconds && session.jobID != nil && !session.region.isEmpty {
                let minute = ConversionCount.minute(of: session.createdAt)
                let provider = session.jobID.flatMap { state.deliveries[$0]?.record.provider } ?? ""
                let route = ConversionRoute(region: session.region, provider: provider)
                var count =
                    counts[minute]?[route] ?? ConversionCount(minute: minute, region: session.region, provider: provider, sent: 0, verified: 0)
                count.sent += 1
                if state.verifiedSessions.contains(session.id) { count.verified += 1 }
                count.longestLife = max(count.longestLife, session.expiresAt.millisecondsSince1970 - session.createdAt.millisecondsSince1970)
                counts[minute, default: [:]][route] = count
            }
            return counts.values.flatMap(\.values).sorted { ($0.minute, $0.route) < ($1.minute, $1.route) }
        }
    }

    // MARK: AppVerificationStore

    public func insertReceipt(_ receipt: AppReceipt) async throws {
        try state.withLock { state in
            guard state.receipts[receipt.receiptHash] == nil else { throw StoreError(.unique("app_receipts_pkey"), "receipt exists") }
            var stored = receipt
            stored.createdAt = receipt.createdAt.keptToMilliseconds
            state.receipts[receipt.receiptHash] = stored
        }
    }

    public func receipt(hash: String) async throws -> AppReceipt? {
        state.withLock { $0.receipts[hash] }
    }

    public func deleteReceipt(hash: String) async throws {
        state.withLock { _ = $0.receipts.removeValue(forKey: hash) }
    }

    public func purgeReceipts(issuedBefore date: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let old = Self.oldest(state.receipts.values, before: date.keptToMilliseconds, limit: limit, time: \.createdAt, key: \.receiptHash)
            for hash in old { state.receipts.removeValue(forKey: hash) }
            return old.count
        }
    }

    public func markDeviceTokenInvalid(hash: String, reason: String, since: Date) async throws {
        state.withLock { $0.invalidTokens[hash] = reason }
    }

    public func invalidDeviceToken(hash: String) async throws -> String? {
        state.withLock { $0.invalidTokens[hash] }
    }
}

extension Date {
    /// The instant as the SQL stores keep it: whole milliseconds since 1970.
    var keptToMilliseconds: Date { Date(milliseconds: millisecondsSince1970) }

    init(microseconds: Int64) { self.init(timeIntervalSince1970: Double(microseconds) / 1_000_000) }
}

extension VerificationSession {
    fileprivate var keptToMilliseconds: VerificationSession {
        var copy = self
        copy.createdAt = createdAt.keptToMilliseconds
        copy.expiresAt = expiresAt.keptToMilliseconds
        copy.consumedAt = consumedAt?.keptToMilliseconds
        return copy
    }
}

extension FederatedIdentity {
    fileprivate var keptToMilliseconds: FederatedIdentity {
        var copy = self
        copy.email = email?.lowercased()
        copy.linkedAt = linkedAt.keptToMilliseconds
        return copy
    }
}

extension UserAccount {
    fileprivate var keptToMilliseconds: UserAccount {
        var copy = self
        copy.email = email?.lowercased()
        copy.createdAt = createdAt.keptToMilliseconds
        copy.lastLoginAt = lastLoginAt.keptToMilliseconds
        copy.validSince = validSince?.keptToMilliseconds
        copy.identities = identities.map(\.keptToMilliseconds)
        copy.phoneProven = phoneNumber != nil && phoneProven
        return copy
    }
}
