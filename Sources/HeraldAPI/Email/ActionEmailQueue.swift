import Foundation
import HeraldCore
import Logging
import Metrics

/// Queues an email that carries an action link (sign-in, verify, reset, change, recover): spends the
/// recipient's limits, stores the code's record, records the ledger row and publishes the job, with the
/// link sealed to the job. When the broker does not confirm, everything is undone (code deleted, row
/// abandoned, limits given back) and the caller gets UNAVAILABLE, so a refused request leaves nothing
/// that could later send.
struct ActionEmailQueue: Sendable {
    let store: any OobCodeStore & DeliveryLedger & RateLimitStore
    let publisher: any JobPublisher
    let keys: HeraldKeys
    let limits: LimitSettings
    let leases: LeasedLimits
    let clock: any WallClock
    let logger: Logger

    var limiter: RateLimiter { RateLimiter(store: store) }
    var sealer: Sealer { Sealer(key: keys.sealing) }

    /// Who asked.
    struct Origin {
        var clientKey: String?
        var locale: String?
        var traceparent: TraceParent
    }

    /// Spends the limits of one email to `recipient` (its mailbox, the client address, the project);
    /// throws the refusal. Returns what to give back if the caller stops before queueing.
    func admit(recipient: EmailAddress, project: ProjectSettings, origin: Origin) async throws -> [LimitCheck] {
        let now = clock.now
        let checks = LimitCheck.forEmail(project: project.id, email: recipient.mailbox, clientKey: origin.clientKey, limits: limits)
        // Limits a leased token covers (the busy client-address and project rows) are spent here.
        let coverage = leases.cover(checks, now: now)
        let refusal: RateLimiter.Refusal?
        do {
            refusal = try await limiter.admit(coverage.storeChecks, now: now)
        } catch {
            leases.giveBack(checks, coverage, now: now)
            throw error
        }
        if let refusal {
            leases.giveBack(checks, coverage, now: now)
            logger.notice(
                "action email refused by a limit",
                metadata: [
                    "project": .string(project.id), "limit": .string(refusal.check.kind.configurationKey),
                    "policy": .string(refusal.check.policy.description), "email": .string(recipient.masked),
                ])
            Counter(label: "herald_api_limit_refusals_total", dimensions: [("project", project.id), ("limit", refusal.check.kind.configurationKey)])
                .increment()
            throw HeraldError(refusal.check.kind.refusal, nil, retryAfter: refusal.retryAfter)
        }
        return checks
    }

    /// Stores `record` and queues `template` to `recipient` with `link` sealed inside; `spent` are the
    /// limits `admit` took (given back if the broker refuses).
    func queue(
        _ record: OobRecord, link: String, to recipient: EmailAddress, template: EmailMessage.Template, params extra: [String: String] = [:],
        project: ProjectSettings, origin: Origin, spent: [LimitCheck]
    ) async throws {
        let now = clock.now
        let jobID = SecureRandom.uuidV7(at: now)
        var record = record
        record.jobID = jobID
        var params = extra
        params["linkSealed"] = sealer.seal(link, jobID: jobID, destination: recipient.value)
        params["app"] = project.displayName
        let job = Job(
            id: jobID, project: project.id, createdAt: now, expiresAt: record.expiresAt, locale: origin.locale,
            payload: .email(EmailMessage(to: recipient.value, template: template, params: params)))
        try await store.insertOobCode(record)
        try await store.recordPending(jobID: jobID, projectID: project.id, type: .email, destination: recipient.value, now: now)
        do {
            try await publisher.publish(job, traceparent: origin.traceparent)
        } catch {
            try? await store.deleteOobCode(hash: record.codeHash)
            try? await store.recordDelivery(jobID: jobID, status: .abandoned, reason: "publish failed: \(error)", now: clock.now)
            // Every limit was spent in the store, the covered ones by their lease: each goes back there.
            try? await limiter.refund(spent, now: clock.now)
            logger.error(
                "email job not confirmed by the broker",
                metadata: ["project": .string(project.id), "job.id": .string(jobID.lowercasedText), "error": .string("\(error)")])
            throw HeraldError(.unavailable, "The email could not be queued for delivery. Try again later.", retryAfter: .seconds(5))
        }
        Counter(label: "herald_api_action_emails_total", dimensions: [("project", project.id), ("template", template.rawValue)]).increment()
        logger.info(
            "action email queued",
            metadata: [
                "project": .string(project.id), "job.id": .string(jobID.lowercasedText), "template": .string(template.rawValue),
                "email": .string(recipient.masked), "traceparent": .string(origin.traceparent.description),
            ])
    }

    /// The link sealed for the emulator's `oobCodes` listing (devMode only).
    func sealedForListing(_ link: String, codeHash: String, devMode: Bool) -> String? {
        devMode ? sealer.seal(link, context: "oob:" + codeHash) : nil
    }
}
