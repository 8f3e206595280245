import Foundation
import HeraldCore
import Testing

/// The worker's decisions for one job, without a broker, a store or a provider.
@Suite("Job lifecycle (the worker's state machine)")
struct JobLifecycleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let settings = JobLifecycle.Settings(
        retryPolicy: RetryPolicy(delays: [.seconds(1), .seconds(5), .seconds(30)]), retryUncertain: false,
        throttleDelays: [.milliseconds(250), .seconds(1), .seconds(5), .seconds(30)], holdLimit: .seconds(1))

    static func machine(
        expiresIn seconds: Double = 300, seenBefore: Bool = false, throttled: Bool = false, settings: JobLifecycle.Settings = settings
    ) -> JobLifecycle {
        JobLifecycle(expiresAt: now.addingTimeInterval(seconds), seenBefore: seenBefore, throttled: throttled, settings: settings)
    }

    /// Drives a fresh, unthrottled job to the provider call (attempt `attempt`).
    static func delivering(attempt: Int = 1, settings: JobLifecycle.Settings = settings, expiresIn: Double = 300) -> JobLifecycle {
        var machine = machine(expiresIn: expiresIn, settings: settings)
        #expect(machine.start(now: now) == .claim)
        #expect(machine.claimed(.claimed(attempt: attempt)) == .deliver(attempt: attempt))
        return machine
    }

    static func finish(_ action: JobLifecycle.Action) -> JobLifecycle.Finish? {
        if case .finish(let finish) = action { finish } else { nil }
    }

    @Test("a fresh job goes straight to its claim; one seen before reads the ledger first; a throttled one asks the throttles")
    func firstSteps() {
        var fresh = Self.machine()
        #expect(fresh.start(now: Self.now) == .claim)
        var seen = Self.machine(seenBefore: true, throttled: true)
        #expect(seen.start(now: Self.now) == .readStatus)
        #expect(seen.statusRead(.retrying) == .checkThrottles)
        var unknown = Self.machine(seenBefore: true)
        #expect(unknown.start(now: Self.now) == .readStatus)
        #expect(unknown.statusRead(nil) == .claim)
    }

    @Test("an expired job is recorded expired and acked, never claimed")
    func expired() throws {
        var machine = Self.machine(expiresIn: 0)
        let finish = try #require(Self.finish(machine.start(now: Self.now)))
        #expect(finish.record == JobLifecycle.Record(status: .expired, reason: "expired before it could be sent"))
        #expect(finish.settlement == .ack)
        #expect(finish.outcome.rawValue == "expired")
    }

    @Test(
        "a job whose ledger row or claim says it is done is acked as a duplicate: its status stays, a duplicate-skipped event is noted",
        arguments: DeliveryStatus.allCases.filter(\.isFinal))
    func duplicates(_ status: DeliveryStatus) throws {
        var read = Self.machine(seenBefore: true)
        _ = read.start(now: Self.now)
        let first = try #require(Self.finish(read.statusRead(status)))
        var claimed = Self.machine()
        _ = claimed.start(now: Self.now)
        let second = try #require(Self.finish(claimed.claimed(.finished(status))))
        for finish in [first, second] {
            #expect(finish.record == nil)
            #expect(finish.duplicateOf == status)
            #expect(finish.settlement == .ack)
            #expect(finish.outcome.rawValue == "duplicate")
        }
    }

    @Test("a claim in doubt is recorded uncertain and never resent; an unknown or re-addressed job is dead-lettered unsent")
    func claims() throws {
        var doubt = Self.machine()
        _ = doubt.start(now: Self.now)
        let uncertain = try #require(Self.finish(doubt.claimed(.inDoubt(owner: "host:1:abc"))))
        #expect(uncertain.record?.status == .uncertain)
        #expect(uncertain.record?.reason?.contains("host:1:abc") == true)
        #expect(uncertain.settlement == .ack)
        for claim in [DeliveryClaim.unknown, .mismatch(field: "to")] {
            var machine = Self.machine()
            _ = machine.start(now: Self.now)
            let finish = try #require(Self.finish(machine.claimed(claim)))
            #expect(finish.record == nil)
            guard case .deadLetter(let reason, 0) = finish.settlement else {
                Issue.record("\(claim) was not dead-lettered")
                continue
            }
            #expect(reason.hasPrefix("unauthenticated: "))
            #expect(finish.outcome.rawValue == "unauthenticated")
        }
        var unavailable = Self.machine()
        _ = unavailable.start(now: Self.now)
        let requeued = try #require(Self.finish(unavailable.claimFailed("connection refused")))
        #expect(requeued.settlement == .requeue(after: .seconds(1)))
        #expect(requeued.record == nil)
    }

    @Test("sent: recorded with its segments and the provider's message id, then acked")
    func sent() throws {
        var machine = Self.delivering()
        let segments = SMSSegments("Your code is 123456")
        let finish = try #require(Self.finish(machine.delivered(.sent(reference: "m1"), segments: segments, now: Self.now)))
        #expect(
            finish.record == JobLifecycle.Record(status: .sent, reason: nil, segments: segments, providerMessageID: "m1", detail: "provider id m1"))
        #expect(finish.settlement == .ack)
        #expect(finish.outcome.rawValue == "sent")
    }

    @Test("permanent failure: recorded failed before it is dead-lettered with the reason and attempt")
    func permanent() throws {
        var machine = Self.delivering(attempt: 2)
        let finish = try #require(Self.finish(machine.delivered(.permanent(reason: "HTTP 400"), now: Self.now)))
        #expect(finish.record == JobLifecycle.Record(status: .failed, reason: "HTTP 400"))
        #expect(finish.settlement == .deadLetter(reason: "HTTP 400", attempt: 2))
    }

    @Test("retryable failures climb the ladder, honour Retry-After, stop before expiry, and dead-letter as dead when the ladder is used up")
    func retries() throws {
        var first = Self.delivering(attempt: 1)
        #expect(
            Self.finish(first.delivered(.retryable(reason: "503", retryAfter: nil), now: Self.now))?.settlement
                == .retry(delay: .seconds(1), attempt: 1))
        var slow = Self.delivering(attempt: 1)
        let later = try #require(Self.finish(slow.delivered(.retryable(reason: "429", retryAfter: .seconds(4)), now: Self.now)))
        #expect(later.settlement == .retry(delay: .seconds(5), attempt: 1))
        #expect(
            later.record == JobLifecycle.Record(status: .retrying, reason: "429", detail: "attempt 1 failed: 429; retry at 08:00:05 UTC (backoff 5s)")
        )
        // Per-number spacing longer than the backoff decides when the retry runs, and the event says so.
        var spaced = Self.delivering(
            attempt: 1,
            settings: {
                var s = Self.settings
                s.perNumberSpacing = .seconds(20)
                return s
            }())
        let spacedRetry = try #require(Self.finish(spaced.delivered(.retryable(reason: "503", retryAfter: nil), now: Self.now)))
        #expect(spacedRetry.record?.detail == "attempt 1 failed: 503; retry at 08:00:20 UTC (backoff 1s, per-number spacing 20s)")
        var late = Self.delivering(attempt: 2, expiresIn: 4)
        let dropped = try #require(Self.finish(late.delivered(.retryable(reason: "503", retryAfter: nil), now: Self.now)))
        #expect(dropped.record?.status == .expired)
        #expect(dropped.settlement == .ack)
        var third = Self.delivering(attempt: 3)
        #expect(
            Self.finish(third.delivered(.retryable(reason: "503", retryAfter: nil), now: Self.now))?.settlement
                == .retry(delay: .seconds(30), attempt: 3))
        var last = Self.delivering(attempt: 4)
        let exhausted = try #require(Self.finish(last.delivered(.retryable(reason: "503", retryAfter: nil), now: Self.now)))
        #expect(exhausted.record?.status == .dead)
        #expect(exhausted.settlement == .deadLetter(reason: "retries exhausted after 4 attempts; last: 503", attempt: 4))
    }

    @Test("an uncertain outcome is recorded and never resent, unless retryUncertain makes it a retry")
    func uncertain() throws {
        var strict = Self.delivering()
        let kept = try #require(Self.finish(strict.delivered(.uncertain(reason: "timeout after sending"), now: Self.now)))
        #expect(kept.record?.status == .uncertain)
        #expect(kept.settlement == .ack)
        var lenientSettings = Self.settings
        lenientSettings.retryUncertain = true
        var lenient = Self.delivering(settings: lenientSettings)
        let retried = try #require(Self.finish(lenient.delivered(.uncertain(reason: "timeout after sending"), now: Self.now)))
        #expect(retried.settlement == .retry(delay: .seconds(1), attempt: 1))
    }

    @Test("throttles: short waits are held in memory, long ones parked once in a queue that waits long enough, none past expiry")
    func throttles() throws {
        func throttled(expiresIn: Double = 300) -> JobLifecycle {
            var machine = Self.machine(expiresIn: expiresIn, throttled: true)
            #expect(machine.start(now: Self.now) == .checkThrottles)
            return machine
        }
        var allowed = throttled()
        #expect(allowed.throttleChecked(.allowed, now: Self.now) == .claim)
        var storeDown = throttled()
        #expect(storeDown.throttleChecked(.unavailable, now: Self.now) == .claim)

        var short = throttled()
        #expect(short.throttleChecked(.refused(limit: "sms.http.rate", retryAfter: .milliseconds(300)), now: Self.now) == .hold(.milliseconds(300)))
        #expect(short.held(now: Self.now.addingTimeInterval(0.3)) == .checkThrottles)
        #expect(short.throttleChecked(.refused(limit: "sms.http.rate", retryAfter: .milliseconds(100)), now: Self.now) == .hold(.milliseconds(100)))
        #expect(short.holds == 2)
        #expect(short.held(now: Self.now.addingTimeInterval(0.4)) == .checkThrottles)
        #expect(short.throttleChecked(.allowed, now: Self.now) == .claim)

        var long = throttled()
        let parked = try #require(Self.finish(long.throttleChecked(.refused(limit: "sms.perNumberSpacing", retryAfter: .seconds(3)), now: Self.now)))
        #expect(parked.settlement == .park(delay: .seconds(5)))
        #expect(parked.record == JobLifecycle.Record(status: .throttled, reason: nil, detail: "sms.perNumberSpacing: parked for 5s"))
        #expect(parked.outcome.rawValue == "throttled")

        // 5.5 s: the 5 s queue brings it back half a second early (held then), rather than 24.5 s late.
        var fitting = throttled()
        #expect(
            Self.finish(fitting.throttleChecked(.refused(limit: "sms.perNumberSpacing", retryAfter: .milliseconds(5500)), now: Self.now))?.settlement
                == .park(delay: .seconds(5)))
        #expect(JobLifecycle.parkingDelay(for: .seconds(40), in: Self.settings.throttleDelays, holdLimit: .seconds(1)) == .seconds(30))

        // The 30 s queue would outlast a code with 20 s left, but a 10 s wait does not: held instead of parked.
        var nearExpiry = throttled(expiresIn: 20)
        #expect(nearExpiry.throttleChecked(.refused(limit: "sms.perNumberSpacing", retryAfter: .seconds(10)), now: Self.now) == .hold(.seconds(10)))

        var tooLate = throttled(expiresIn: 20)
        let dropped = try #require(
            Self.finish(tooLate.throttleChecked(.refused(limit: "sms.perNumberSpacing", retryAfter: .seconds(20)), now: Self.now)))
        #expect(dropped.record == JobLifecycle.Record(status: .expired, reason: "throttled (sms.perNumberSpacing) until past expiresAt"))
        #expect(dropped.settlement == .ack)
        var paced = throttled()
        #expect(Self.finish(paced.throttleChecked(.wouldExpire(limit: "sms.http.rate"), now: Self.now))?.record?.status == .expired)
        var heldTooLong = throttled(expiresIn: 1)
        #expect(
            heldTooLong.throttleChecked(.refused(limit: "sms.http.rate", retryAfter: .milliseconds(500)), now: Self.now) == .hold(.milliseconds(500)))
        #expect(Self.finish(heldTooLong.held(now: Self.now.addingTimeInterval(1)))?.record?.status == .expired)
    }

    @Test("every finish records before it settles: no ack or republish leaves a claimed job without an outcome")
    func recordedBeforeSettled() throws {
        let outcomes: [DeliveryOutcome] = [
            .sent(reference: nil), .permanent(reason: "x"), .retryable(reason: "x", retryAfter: nil), .uncertain(reason: "x"),
        ]
        for attempt in 1...4 {
            for outcome in outcomes {
                var machine = Self.delivering(attempt: attempt)
                let finish = try #require(Self.finish(machine.delivered(outcome, now: Self.now)))
                // Once claimed, the ledger must say where the job went, whatever the settlement.
                #expect(finish.record != nil, "\(outcome) at attempt \(attempt)")
            }
        }
    }

    @Test("a republish that fails: retries and parks go back to the work queue, dead letters are rejected to the broker's")
    func republishFailures() {
        func fallback(_ settlement: JobLifecycle.Settlement) -> (Bool, String) {
            let answer = JobLifecycle.republishFailed(settlement)
            return (answer.requeue, answer.outcome.rawValue)
        }
        #expect(fallback(.retry(delay: .seconds(1), attempt: 1)) == (true, "requeued"))
        #expect(fallback(.park(delay: .seconds(1))) == (true, "requeued"))
        #expect(fallback(.deadLetter(reason: "x", attempt: 1)) == (false, "rejected"))
    }
}

/// What the machine does with a provider failure when another provider of the route may take the job.
@Suite("Job lifecycle: failover between providers")
struct JobLifecycleFailoverTests {
    typealias Base = JobLifecycleTests
    static let failure = DeliveryOutcome.providerFailure(reason: "Twilio answered HTTP 503", code: "http_503")

    @Test("a provider failure with another provider free records the attempt, then asks the throttles again and claims anew")
    func failsOver() {
        var machine = Base.delivering()
        let action = machine.delivered(Self.failure, now: Base.now, provider: "twilio", failover: "vonage")
        #expect(
            action
                == .failOver(
                    JobLifecycle.Record(status: .retrying, reason: "Twilio answered HTTP 503", detail: "attempt 1 twilio http_503, next vonage")))
        #expect(machine.failedOver(now: Base.now) == .claim)
        #expect(machine.claimed(.claimed(attempt: 2)) == .deliver(attempt: 2))
        var throttled = JobLifecycle(expiresAt: Base.now.addingTimeInterval(300), seenBefore: false, throttled: true, settings: Base.settings)
        #expect(throttled.start(now: Base.now) == .checkThrottles)
        #expect(throttled.throttleChecked(.allowed, now: Base.now) == .claim)
        _ = throttled.claimed(.claimed(attempt: 1))
        _ = throttled.delivered(Self.failure, now: Base.now, provider: "twilio", failover: "vonage")
        #expect(throttled.failedOver(now: Base.now) == .checkThrottles)
    }

    @Test("without another provider, or with the retries spent, a provider failure is a retry or the end, as a retryable one")
    func noFailover() throws {
        var alone = Base.delivering()
        let retry = try #require(Base.finish(alone.delivered(Self.failure, now: Base.now, provider: "twilio", failover: nil)))
        #expect(retry.settlement == .retry(delay: .seconds(1), attempt: 1))
        #expect(retry.record?.detail?.hasPrefix("attempt 1 at twilio failed: Twilio answered HTTP 503; retry at") == true)
        var spent = Base.delivering(attempt: 4)
        let dead = try #require(Base.finish(spent.delivered(Self.failure, now: Base.now, provider: "twilio", failover: "vonage")))
        #expect(dead.record?.status == .dead)
        var late = Base.delivering(expiresIn: 0.5)
        let expired = try #require(Base.finish(late.delivered(Self.failure, now: Base.now, provider: "twilio", failover: "vonage")))
        #expect(expired.record?.status == .expired, "the failover's retry would come after the code expired")
    }

    @Test("a failover that finds the code expired drops the job")
    func failoverAfterExpiry() throws {
        var machine = Base.delivering(expiresIn: 10)
        _ = machine.delivered(Self.failure, now: Base.now, provider: "twilio", failover: "vonage")
        let finish = try #require(Base.finish(machine.failedOver(now: Base.now.addingTimeInterval(11))))
        #expect(finish.record?.status == .expired && finish.settlement == .ack)
    }

    @Test("a fraud block ends the job failed and dead-lettered, whatever other provider there is")
    func fraudBlock() throws {
        var machine = Base.delivering()
        let finish = try #require(
            Base.finish(machine.delivered(.blocked(reason: "Twilio 30450", code: "30450"), now: Base.now, provider: "twilio", failover: "vonage")))
        #expect(finish.record?.status == .failed && finish.settlement == .deadLetter(reason: "Twilio 30450", attempt: 1))
        #expect(finish.record?.detail == "fraud block at twilio: Twilio 30450; not sent elsewhere")
    }
}
