import Crypto
import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldWorker

/// The worker's whole path for one job, in process: admission, lifecycle, ledger and settlement, on
/// the in-memory queue and the memory store. Each test reads what a broker would have seen (acks,
/// copies, dead letters) and what the ledger says.
@Suite("Worker service in process")
struct WorkerServiceTests {
    typealias Event = MemoryJobQueue.Event

    @Test("a sent job: one provider call, the outcome recorded, then acked")
    func sent() async throws {
        let harness = WorkerHarness()
        let job = try await harness.job()
        await harness.send(job)
        #expect(harness.channel.calls.map(\.to) == [WorkerHarness.number])
        #expect(harness.queue.events == [.acked(messageID: job.id.lowercasedText)])
        #expect(try await harness.status(job) == .sent)
        #expect(harness.queue.unsettledCount == 0)
    }

    @Test("refused before anything is read: schema, signature, producer, body, queue; dead-lettered at attempt 0, never sent")
    func admissionRefusals() async throws {
        let harness = WorkerHarness()
        let job = try await harness.job()
        let good = AMQPJobPublisher.message(for: job, topology: WorkerHarness.topology, traceparent: .random(), signer: harness.keys.jobSigner)
        func refused(_ change: (inout AMQPOutgoingMessage) -> Void) async -> String? {
            var message = good
            change(&message)
            let before = harness.queue.deadLetters.count
            harness.queue.push(message)
            await harness.processNext()
            guard harness.queue.deadLetters.count == before + 1, case .string(let reason) = harness.queue.deadLetters.last?.headers[JobHeader.reason]
            else { return nil }
            #expect(harness.queue.deadLetters.last?.headers[JobHeader.attempt] == .int(0))
            return reason
        }
        #expect(await refused { $0.headers[JobHeader.schema] = .int(99) } == "unsupported x-herald-schema 99")
        #expect(
            await refused { $0.headers[JobSignature.header] = .string("sha256=00") }?.hasPrefix("unauthenticated: an invalid x-herald-signature")
                == true)
        #expect(
            await refused { $0.headers[JobHeader.producer] = .string("crm") } == "unauthenticated: unknown producer 'crm' (integrations.producers)")
        let garbage = Data("{not json".utf8)
        #expect(
            await refused {
                $0.body = garbage
                $0.headers[JobSignature.header] = .string(JobSignature.sign(garbage, signer: harness.keys.jobSigner))
            }?.hasPrefix("malformed job:") == true)
        let mail = Job(
            project: "p1", createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
            payload: .email(EmailMessage(to: "a@example.com", template: .signInLink, params: [:])))
        let mailBody = JobCodec.encode(mail)
        #expect(
            await refused {
                $0.body = mailBody
                $0.headers[JobSignature.header] = .string(JobSignature.sign(mailBody, signer: harness.keys.jobSigner))
            } == "a email job in the sms queue")
        #expect(harness.channel.calls.isEmpty)
        #expect(harness.queue.events.allSatisfy { if case .acked = $0 { true } else if case .deadLettered = $0 { true } else { false } })
        #expect(try await harness.status(job) == .pending, "the real job's row is untouched")
    }

    @Test("a signed job without a ledger row is dead-lettered unsent")
    func noLedgerRow() async throws {
        let harness = WorkerHarness()
        let job = try await harness.job(recorded: false)
        await harness.send(job)
        #expect(
            harness.queue.events.first
                == .deadLettered(messageID: job.id.lowercasedText, reason: "unauthenticated: no ledger row for this job id", attempt: 0))
        #expect(harness.channel.calls.isEmpty)
    }

    @Test("foreign producers: a policy refusal and a job id in use are dead-lettered; an admitted job is recorded and sent")
    func foreignProducers() async throws {
        let key = Data(repeating: 9, count: 32)
        let policy = ForeignJobPolicy(
            integrations: IntegrationSettings(producers: [.init(id: "crm", key: key, projects: ["p1"], types: [.sms])]),
            projects: [TestConfiguration.project(id: "p1"), TestConfiguration.project(id: "p2")], prefixDigits: 6)
        let harness = WorkerHarness(foreignJobs: policy)
        func push(_ job: Job) async {
            var message = AMQPJobPublisher.message(
                for: job, topology: WorkerHarness.topology, traceparent: .random(), signer: KeyedHMAC(key: .init(data: key)))
            message.headers[JobHeader.producer] = .string("crm")
            harness.queue.push(message)
            await harness.processNext()
        }
        let elsewhere = Job(
            project: "p2", createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
            payload: .sms(SMSMessage(to: WorkerHarness.number, template: .text, params: ["text": "Hi"])))
        await push(elsewhere)
        #expect(harness.queue.events.last == .acked(messageID: elsewhere.id.lowercasedText))
        #expect(
            harness.queue.events.dropLast().last
                == .deadLettered(
                    messageID: elsewhere.id.lowercasedText, reason: "forbidden: producer 'crm' may not publish for project 'p2'", attempt: 0))

        // herald-api's own pending job: the producer may not take its id.
        let owned = try await harness.job()
        var taken = owned
        taken.payload = .sms(SMSMessage(to: WorkerHarness.number, template: .text, params: ["text": "Hi"]))
        await push(taken)
        #expect(harness.queue.deadLetters.count == 2)
        #expect(harness.queue.deadLetters.last?.headers[JobHeader.reason] == .string("forbidden: job id in use"))

        let admitted = Job(
            project: "p1", createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
            payload: .sms(SMSMessage(to: WorkerHarness.number, template: .text, params: ["text": "Hi"])))
        await push(admitted)
        #expect(try await harness.status(admitted) == .sent)
        #expect(harness.channel.calls.map(\.jobID) == [admitted.id])
    }

    @Test("a retryable failure: recorded retrying, a copy in the first retry queue, the original acked; the copy sends")
    func retry() async throws {
        let harness = WorkerHarness(outcomes: [.retryable(reason: "503", retryAfter: nil)])
        let job = try await harness.job()
        await harness.send(job)
        let id = job.id.lowercasedText
        #expect(harness.queue.events == [.delayed(messageID: id, .retry(delay: .seconds(1), attempt: 1)), .acked(messageID: id)])
        #expect(harness.queue.delayed.first?.routingKey == WorkerHarness.topology.retryQueue(.sms, delay: .seconds(1)))
        #expect(try await harness.status(job) == .retrying)
        #expect(harness.queue.releaseDelayed() == 1)
        await harness.processNext()
        #expect(try await harness.status(job) == .sent)
        #expect(harness.channel.calls.count == 2)
    }

    @Test("a retry's ledger event names when it really runs: the destination's spacing when longer than the backoff")
    func retryEventNamesSpacing() async throws {
        let harness = WorkerHarness(outcomes: [.retryable(reason: "503", retryAfter: nil)], perNumberSpacing: .seconds(20))
        let job = try await harness.job()
        await harness.send(job)
        let events = try #require(try await harness.store.message(id: job.id)).events
        let detail = try #require(
            events.last { $0.status == .queued && $0.detail?.hasPrefix("attempt 1 failed") == true }?.detail ?? events.last?.detail)
        #expect(detail.contains("(backoff 1s, per-number spacing 20s)"), "\(events)")
    }

    @Test("retries run out: the last failure is dead-lettered with its attempt and recorded dead")
    func retriesRunOut() async throws {
        let failure = DeliveryOutcome.retryable(reason: "503", retryAfter: nil)
        let harness = WorkerHarness(outcomes: [failure, failure, failure])
        let job = try await harness.job()
        await harness.send(job)
        for _ in 0..<2 {
            harness.queue.releaseDelayed()
            await harness.processNext()
        }
        let id = job.id.lowercasedText
        #expect(
            harness.queue.events.filter { if case .delayed = $0 { true } else { false } } == [
                .delayed(messageID: id, .retry(delay: .seconds(1), attempt: 1)), .delayed(messageID: id, .retry(delay: .seconds(5), attempt: 2)),
            ])
        guard case .deadLettered(_, let reason, let attempt) = harness.queue.events.dropLast().last else {
            Issue.record("not dead-lettered: \(harness.queue.events)")
            return
        }
        #expect(attempt == 3 && reason.contains("503"))
        #expect(reason.hasPrefix("retries exhausted after 3 attempts"))
        #expect(try await harness.status(job) == .dead)
        #expect(harness.channel.calls.count == 3)
    }

    @Test("a permanent refusal is dead-lettered after one call and recorded failed")
    func permanent() async throws {
        let harness = WorkerHarness(outcomes: [.permanent(reason: "invalid number", code: "21211")])
        let job = try await harness.job()
        await harness.send(job)
        guard case .deadLettered(_, let reason, 1) = harness.queue.events.first else {
            Issue.record("not dead-lettered at attempt 1: \(harness.queue.events)")
            return
        }
        #expect(reason.contains("invalid number"))
        #expect(try await harness.status(job) == .failed)
    }

    @Test("an expired job is dropped unsent and recorded expired")
    func expired() async throws {
        let harness = WorkerHarness()
        let job = try await harness.job(expiresIn: -1)
        await harness.send(job)
        #expect(harness.queue.events == [.acked(messageID: job.id.lowercasedText)])
        #expect(harness.channel.calls.isEmpty)
        #expect(try await harness.status(job) == .expired)
    }

    @Test("a redelivered copy of a sent job is acked without a second SMS")
    func duplicate() async throws {
        let harness = WorkerHarness()
        let job = try await harness.job()
        await harness.send(job)
        harness.queue.push(
            AMQPJobPublisher.message(for: job, topology: WorkerHarness.topology, traceparent: .random(), signer: harness.keys.jobSigner),
            redelivered: true)
        await harness.processNext()
        #expect(harness.channel.calls.count == 1)
        #expect(harness.queue.events.count == 2 && harness.queue.unsettledCount == 0)
        #expect(try await harness.status(job) == .sent)
    }

    @Test("a job another worker claimed and never finished is in doubt: recorded uncertain, not resent; retryUncertain resends it")
    func uncertain() async throws {
        for resend in [false, true] {
            let harness = WorkerHarness(retryUncertain: resend)
            let job = try await harness.job()
            _ = try await harness.store.claimDelivery(
                jobID: job.id, projectID: job.project, type: .sms, destination: WorkerHarness.number, owner: "crashed-worker",
                description: DeliveryDescription(template: "text", locale: nil, provider: "scripted", producer: nil), now: Date(),
                reclaimInDoubt: false)
            harness.queue.push(
                AMQPJobPublisher.message(for: job, topology: WorkerHarness.topology, traceparent: .random(), signer: harness.keys.jobSigner),
                redelivered: true)
            await harness.processNext()
            #expect(harness.queue.events == [.acked(messageID: job.id.lowercasedText)])
            #expect(harness.channel.calls.count == (resend ? 1 : 0))
            #expect(try await harness.status(job) == (resend ? .sent : .uncertain))
        }
    }

    @Test("a provider answer that may have been sent is recorded uncertain and not retried")
    func uncertainAnswer() async throws {
        let harness = WorkerHarness(outcomes: [.uncertain(reason: "timed out after the request was sent")])
        let job = try await harness.job()
        await harness.send(job)
        #expect(harness.queue.events == [.acked(messageID: job.id.lowercasedText)])
        #expect(harness.queue.delayed.isEmpty)
        #expect(try await harness.status(job) == .uncertain)
    }

    @Test("per-number spacing: a short wait is held in memory, a long one parks the job in a throttle queue with its slot")
    func throttles() async throws {
        let held = WorkerHarness(perNumberSpacing: .milliseconds(300), throttleHold: .seconds(5))
        let first = try await held.job()
        let second = try await held.job()
        // The first job's slot is reserved after `before`; the second's comes a spacing later, and it
        // is sent no earlier.
        let before = ContinuousClock.now
        await held.send(first)
        await held.send(second)
        let times = held.channel.callTimes
        #expect(times.count == 2 && times[1] - before >= .milliseconds(290), "the second waited for its slot")
        #expect(held.queue.delayed.isEmpty)
        #expect(try await held.status(second) == .sent)

        let parked = WorkerHarness(perNumberSpacing: .seconds(20), throttleHold: .zero)
        let one = try await parked.job()
        let two = try await parked.job()
        await parked.send(one)
        await parked.send(two)
        guard case .delayed(_, .throttle(let delay, let notBefore)) = parked.queue.events.dropLast().last else {
            Issue.record("not parked: \(parked.queue.events)")
            return
        }
        #expect(delay == .seconds(30), "the shortest throttle queue that waits long enough")
        #expect(notBefore != nil)
        #expect(parked.queue.delayed.first?.headers[JobHeader.throttled] == .int(1))
        #expect(try await parked.status(two) == .throttled)
        #expect(parked.channel.calls.map(\.jobID) == [one.id])
    }

    @Test("copies the queue does not take: a retry goes back to the work queue, a dead letter to the broker's own")
    func unconfirmedCopies() async throws {
        let harness = WorkerHarness(outcomes: [.retryable(reason: "503", retryAfter: nil), .permanent(reason: "no")])
        harness.queue.failPublishes(true)
        let retried = try await harness.job()
        await harness.send(retried)
        #expect(harness.queue.events.first == .requeued(messageID: retried.id.lowercasedText))
        // The requeued delivery comes back; it is refused for good this time and its dead letter is not taken either.
        await harness.processNext()
        #expect(harness.queue.events.last == .rejected(messageID: retried.id.lowercasedText))
    }

    @Test("shutdown: the provider call under way finishes and is acked; deliveries not started go back to the queue")
    func shutdownGrace() async throws {
        let harness = WorkerHarness(concurrency: 1, shutdownGrace: .seconds(5), providerCall: .milliseconds(400))
        let jobs = [try await harness.job(), try await harness.job(to: "+447911123457"), try await harness.job(to: "+447911123458")]
        let group = ServiceGroup(services: [harness.worker], logger: .init(label: "worker-test"))
        let running = Task { try await group.run() }
        for job in jobs { harness.queue.push(job, signer: harness.keys.jobSigner) }
        #expect(await harness.queue.waitFor { _ in harness.channel.calls.count == 1 })
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(harness.channel.calls.count == 1, "nothing new starts once stopping")
        #expect(harness.queue.events.first == .acked(messageID: jobs[0].id.lowercasedText))
        #expect(try await harness.status(jobs[0]) == .sent)
        #expect(harness.queue.unsettledCount == 0, "every delivery was settled: acked or handed back")
        #expect(try await harness.status(jobs[1]) == .pending)
    }

    @Test("shutdown grace elapsed: a job held for its spacing slot goes back to the queue unsent")
    func shutdownGraceElapsed() async throws {
        let harness = WorkerHarness(perNumberSpacing: .seconds(30), throttleHold: .seconds(60), shutdownGrace: .seconds(1))
        let first = try await harness.job()
        let second = try await harness.job()
        let group = ServiceGroup(services: [harness.worker], logger: .init(label: "worker-test"))
        let running = Task { try await group.run() }
        harness.queue.push(first, signer: harness.keys.jobSigner)
        harness.queue.push(second, signer: harness.keys.jobSigner)
        #expect(await harness.queue.waitFor { $0.contains(.acked(messageID: first.id.lowercasedText)) })
        let stopped = ContinuousClock.now
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(harness.queue.events.contains(.requeued(messageID: second.id.lowercasedText)))
        #expect(ContinuousClock.now - stopped < .seconds(20), "handed back at the grace, not at its slot 30 s on")
        #expect(harness.channel.calls.map(\.jobID) == [first.id])
        #expect(try await harness.status(second) != .sent)
    }

    @Test("start-up names the effective settings; a provider rate another worker runs differently is a warning naming both")
    func startupSettings() async throws {
        let logs = CapturedLogs()
        let harness = WorkerHarness(perNumberSpacing: .seconds(5), providerRate: RatePolicy.parse("100/1s")!, logs: logs)
        // Another worker of the same provider spent its rate of 2/1s a moment ago.
        let other = LimitCheck(kind: .provider, scope: "scripted", subject: "scripted", policy: RatePolicy.parse("2/1s")!)
        _ = try await harness.store.rateReserve(key: other.key, parameters: GCRA.Parameters(other.policy), now: Date().microsecondsSince1970)
        let group = ServiceGroup(services: [harness.worker], logger: .init(label: "worker-test"))
        let running = Task { try await group.run() }
        #expect(await harness.queue.waitFor { _ in logs.text.contains("worker started") })
        await group.triggerGracefulShutdown()
        try await running.value
        let started = try #require(logs.text.split(separator: "\n").first { $0.contains("worker started") })
        #expect(started.contains("providerRate=100/1s") && started.contains("spacing=5s") && started.contains("concurrency=4"), "\(started)")
        let warning = try #require(logs.text.split(separator: "\n").first { $0.contains("different rate") })
        #expect(warning.contains("rate=100/1s") && warning.contains("otherRates=2/1s"), "\(warning)")
    }

    @Test("workers that agree on the rate say nothing about it")
    func agreeingRates() async throws {
        let logs = CapturedLogs()
        let harness = WorkerHarness(providerRate: RatePolicy.parse("100/1s")!, logs: logs)
        let same = LimitCheck(kind: .provider, scope: "scripted", subject: "scripted", policy: RatePolicy.parse("100/1s")!)
        _ = try await harness.store.rateReserve(key: same.key, parameters: GCRA.Parameters(same.policy), now: Date().microsecondsSince1970)
        let group = ServiceGroup(services: [harness.worker], logger: .init(label: "worker-test"))
        let running = Task { try await group.run() }
        #expect(await harness.queue.waitFor { _ in logs.text.contains("worker started") })
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(logs.text.contains("different rate") == false)
    }

}
