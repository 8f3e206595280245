import Foundation
import HeraldCore
import HeraldRuntime
import Logging
import Metrics
import ServiceLifecycle

/// Housekeeping on the shared store, once a minute: deletes sessions a day after they expired (until
/// then they answer SESSION_EXPIRED, not INVALID_SESSION_INFO), email codes and app receipts a day
/// old, spent credentials once they expire, rate-limit keys whose time has passed and ledger rows
/// unchanged for `ledger.retention`; publishes the last hour's verified÷sent ratio per country (a
/// collapse of that ratio is the signature of SMS pumping) and how long the oldest snapshot on the
/// store's database has been held (`StoreHealth`).
///
/// Every delete goes through `PurgePacing`: statements of a few hundred rows (a few thousand limit keys
/// looked at), each followed by a pause as long as it took, so a send waits at most for one statement
/// and a purge takes at most about half of SQLite's writer, however many rows a busy minute left
/// behind. The limit keys are swept every ten minutes rather than every pass (`RateKeySweep`). With
/// several herald-api on one store, only the one holding the housekeeping turn purges
/// (`HousekeepingTurn`); every one publishes the gauges.
struct StoreMaintenance: Service {
    let store:
        any VerificationStore & RateLimitStore & AppVerificationStore & OobCodeStore & MessageLedger & CredentialReplayStore & AdminSessionStore
            & StoreHealth & TurnStore
    let retention: Duration
    let logger: Logger

    /// How long after its creation a session's conversion can still change, as this process's
    /// configuration says: the longest code life of any project, plus a minute for late commits and
    /// other hosts' clocks. The sessions' own code lives lengthen it (`ConversionWindow`).
    let conversionSettle: Duration
    static func conversionSettle(_ configuration: HeraldConfiguration) -> Duration {
        (configuration.projects.map(\.phone.codeTTL).max() ?? .zero) + ConversionWindow.margin
    }

    /// How each purge paces its statements (`PurgePacing.sessions` and the others say why these).
    struct Pacing: Sendable {
        var sessions = PurgePacing.sessions
        var ledger = PurgePacing.ledger
        var smallRows = PurgePacing.smallRows
        var rateKeys = PurgePacing.rateKeys
    }
    var pacing = Pacing()
    /// This process as the housekeeping turn's holder.
    var holder = SecureRandom.instanceName()
    let snapshotAge = Gauge(label: "herald_store_oldest_snapshot_seconds")
    let holdingTurn = Gauge(label: "herald_store_housekeeping_turn")

    func run() async throws {
        var conversion = ConversionWindow(settle: conversionSettle)
        var turn = HousekeepingTurn()
        var rateKeys = RateKeySweep.housekeeping
        while Task.isCancelled == false, Task.isShuttingDownGracefully == false {
            // Passes start a minute apart, or at once after one that took longer (a pass behind takes up
            // to its budgets): a long pass does not also push the next, and the gauges, a minute away.
            let next = ContinuousClock.now + .seconds(60)
            do {
                let now = Date()
                try await purgesInTurn(now: now, turn: &turn, rateKeys: &rateKeys)
                let scanned = Date()
                conversion.take(try await store.conversion(since: conversion.scanStart(now: scanned)), now: scanned)
                for entry in conversion.totals() {
                    let dimensions = [("provider", entry.route.provider), ("country", entry.route.region)]
                    Gauge(label: "herald_sms_sent_last_hour", dimensions: dimensions).record(entry.sent)
                    Gauge(label: "herald_sms_verified_last_hour", dimensions: dimensions).record(entry.verified)
                    Gauge(label: "herald_sms_conversion_ratio", dimensions: dimensions)
                        .record(entry.sent == 0 ? 0 : Double(entry.verified) / Double(entry.sent))
                }
                // A snapshot held for minutes slows every admission on PostgreSQL (`StoreHealth`); the
                // alert HeraldStoreSnapshotHeld watches this.
                snapshotAge.record(try await store.oldestSnapshot()?.seconds ?? 0)
            } catch {
                logger.warning("store maintenance failed", metadata: ["error": .string("\(error)")])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(until: next, clock: .continuous) }
        }
        // Stopping: another process takes the turn at its next pass rather than after the term.
        if turn.holding { try? await store.endTurn(HousekeepingTurn.name, holder: holder) }
    }

    /// A pass's purges, when this process holds the housekeeping turn (taken or renewed first). A new
    /// holding starts its own limit-key sweep: one left from an earlier holding would go on from a
    /// stale cursor and count as overdue.
    func purgesInTurn(now: Date, turn: inout HousekeepingTurn, rateKeys: inout RateKeySweep) async throws {
        if try await takeTurn(&turn, now: now) == .took { rateKeys = .housekeeping }
        if turn.holding { try await purges(now: now, rateKeys: &rateKeys) }
    }

    /// Takes or renews the housekeeping turn; logs and publishes what changed. A failed try counts as
    /// not holding it (and throws, skipping the pass's purges).
    func takeTurn(_ turn: inout HousekeepingTurn, now: Date) async throws -> HousekeepingTurn.Change? {
        let held: Bool
        do {
            held = try await store.takeTurn(HousekeepingTurn.name, holder: holder, until: turn.until(now: now), now: now.millisecondsSince1970)
        } catch {
            report(turn.tried(held: false), holding: false)
            throw error
        }
        let change = turn.tried(held: held)
        report(change, holding: held)
        return change
    }

    private func report(_ change: HousekeepingTurn.Change?, holding: Bool) {
        holdingTurn.record(holding ? 1 : 0)
        switch change {
        case .took: logger.notice("housekeeping: this process purges the store now", metadata: ["holder": .string(holder)])
        case .lost: logger.notice("housekeeping: this process no longer purges the store", metadata: ["holder": .string(holder)])
        case nil: break
        }
    }

    /// One pass of every purge, as of `now`; `rateKeys` carries the limit keys' sweep from pass to pass.
    func purges(now: Date, rateKeys: inout RateKeySweep) async throws {
        let dayAgo = now.addingTimeInterval(-86_400)
        try await purge("sessions", pacing.sessions) { try await store.purgeSessions(expiredBefore: dayAgo, limit: $0) }
        try await purgeRateKeys(now: now, sweep: &rateKeys)
        try await purge("app_receipts", pacing.smallRows) { try await store.purgeReceipts(issuedBefore: dayAgo, limit: $0) }
        try await purge("oob_codes", pacing.smallRows) { try await store.purgeOobCodes(expiredBefore: dayAgo, limit: $0) }
        try await purge("credentials", pacing.smallRows) { try await store.purgeCredentials(expiredBefore: now, limit: $0) }
        try await purge("admin_sessions", pacing.smallRows) { try await store.purgeAdminSessions(expiredBefore: now, limit: $0) }
        try await purgeLedger(now: now)
    }

    /// Deletes ledger rows past the retention.
    func purgeLedger(now: Date) async throws {
        let cutoff = now.addingTimeInterval(-Double(retention.components.seconds))
        try await purge("ledger", pacing.ledger) { try await store.purgeMessages(updatedBefore: cutoff, limit: $0) }
    }

    /// The limit keys' walk when `sweep` has one due or under way: chunks of keys looked at, the passed
    /// ones deleted. A sweep that outlasts this pass's budget goes on in the next; it is behind only
    /// once it has run longer than its period.
    func purgeRateKeys(now: Date, sweep: inout RateKeySweep) async throws {
        guard sweep.start(now: now) != nil else { return }
        let before = now.microsecondsSince1970
        try await paced("rate_keys", pacing.rateKeys, behind: { sweep.overdue(now: Date()) }) { limit in
            let step = try await store.purgeRates(after: sweep.cursor ?? "", limit: limit, before: before)
            sweep.walked(step.walked, of: limit, last: step.last)
            return (step.walked, step.deleted)
        }
    }

    /// One paced pass of `delete` (at most its argument's rows per statement).
    func purge(_ rows: String, _ pacing: PurgePacing, _ delete: (Int) async throws -> Int) async throws {
        try await paced(rows, pacing, behind: { true }) { limit in
            let deleted = try await delete(limit)
            return (deleted, deleted)
        }
    }

    /// One paced pass of `step`, which works through at most its argument's rows in one statement and
    /// says how many it went through and deleted: counts what it deleted, and says so when rows remain
    /// after the pass's budget and `behind` agrees (the purge is behind what the store gains).
    func paced(
        _ rows: String, _ pacing: PurgePacing, behind: () -> Bool, _ step: (Int) async throws -> (walked: Int, deleted: Int)
    ) async throws {
        let clock = ContinuousClock()
        let began = clock.now
        var deleted = 0
        let pass = try await pacing.pass(
            delete: { limit in
                let done = try await step(limit)
                deleted += done.deleted
                return done.walked
            },
            pause: { wait in try? await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) } },
            stopping: { Task.isShuttingDownGracefully || Task.isCancelled })
        if deleted > 0 { Counter(label: "herald_store_purged_total", dimensions: [("rows", rows)]).increment(by: deleted) }
        if pass.behind, behind() {
            logger.notice(
                "purge behind: rows remain after this pass; the next goes on",
                metadata: ["rows": .string(rows), "deleted": .stringConvertible(deleted), "pass": .string("\(began.duration(to: clock.now))")])
        }
    }
}
