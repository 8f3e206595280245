import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldWorker

/// Routing between providers in process: which provider each attempt goes to, what the ledger keeps
/// of every attempt, and the breaker every worker shares through the store.
@Suite("Provider routing and failover in process")
struct ProviderFailoverTests {
    static let failure = DeliveryOutcome.providerFailure(reason: "Twilio answered HTTP 503", code: "http_503")

    static func providers(_ names: String...) -> [ScriptedChannel] { names.map { ScriptedChannel([], name: $0) } }

    @Test("a provider failure fails over at once: the next provider sends, the attempt is in the ledger, no retry copy")
    func failsOver() async throws {
        let harness = WorkerHarness(providers: [ScriptedChannel([Self.failure], name: "twilio"), ScriptedChannel([], name: "vonage")])
        let job = try await harness.job()
        await harness.send(job)
        #expect(harness.channels.map(\.calls.count) == [1, 1])
        #expect(harness.queue.events == [.acked(messageID: job.id.lowercasedText)])
        let record = try #require(try await harness.store.message(id: job.id))
        #expect(record.status == .sent && record.provider == "vonage" && record.providerMessageID == "ref-vonage-\(job.id.lowercasedText)")
        #expect(record.attempts == 2)
        #expect(record.events.contains { $0.detail == "attempt 1 twilio http_503, next vonage" }, "\(record.events)")
    }

    @Test("a retry-later answer waits and asks the same provider again, the attempt carried in the job")
    func retryLaterStays() async throws {
        let harness = WorkerHarness(
            providers: [
                ScriptedChannel([.retryable(reason: "20429", retryAfter: nil, code: "20429")], name: "twilio"), ScriptedChannel([], name: "vonage"),
            ])
        let job = try await harness.job()
        await harness.send(job)
        #expect(harness.queue.events.first == .delayed(messageID: job.id.lowercasedText, .retry(delay: .seconds(1), attempt: 1)))
        #expect(harness.queue.releaseDelayed() == 1)
        await harness.processNext()
        #expect(harness.channels.map(\.calls.count) == [2, 0])
        #expect(try await harness.status(job) == .sent)
    }

    @Test("once every provider of the chain failed, the job waits in the retry queue; its next attempt goes on round the chain")
    func retryAfterFailureMovesOn() async throws {
        // A delivery asks each provider once: going straight back to one that just failed would only
        // hammer it. After the backoff, the next attempt goes to the one after the provider that failed
        // last, wrapping round.
        let harness = WorkerHarness(providers: [ScriptedChannel([Self.failure], name: "a"), ScriptedChannel([Self.failure], name: "b")])
        let job = try await harness.job()
        await harness.send(job)
        #expect(harness.channels.map(\.calls.count) == [1, 1])
        #expect(harness.queue.releaseDelayed() == 1)
        await harness.processNext()
        #expect(harness.channels.map(\.calls.count) == [2, 1])
        #expect(try await harness.status(job) == .sent)
    }

    @Test("an answer about the number ends the job: no other provider is asked (invalid number, fraud block, uncertain)")
    func finalAnswersDoNotFailOver() async throws {
        for outcome in [
            DeliveryOutcome.permanent(reason: "Twilio 21211: invalid To", code: "21211"),
            .blocked(reason: "Twilio 30450: SMS pumping protection", code: "30450"),
            .uncertain(reason: "no answer after sending", code: "no_answer"),
        ] {
            let harness = WorkerHarness(providers: [ScriptedChannel([outcome], name: "twilio"), ScriptedChannel([], name: "vonage")])
            let job = try await harness.job()
            await harness.send(job)
            #expect(harness.channels.map(\.calls.count) == [1, 0], "\(outcome)")
            let status = try await harness.status(job)
            if case .uncertain = outcome { #expect(status == .uncertain) } else { #expect(status == .failed, "\(outcome)") }
            if case .blocked = outcome {
                let record = try #require(try await harness.store.message(id: job.id))
                #expect(record.events.contains { $0.detail?.hasPrefix("fraud block at twilio: Twilio 30450") == true }, "\(record.events)")
            }
        }
    }

    @Test("routes: the longest prefix wins, then the region, then default")
    func routesByPrefixAndRegion() async throws {
        let routes = try SMSRoutes(["+4477": ["b"], "GB": ["c"], "default": ["a"]])
        let harness = WorkerHarness(providers: Self.providers("a", "b", "c"), routes: routes)
        for number in ["+447700900123", "+441632960123", "+15005550006"] { await harness.send(try await harness.job(to: number)) }
        #expect(harness.channels.map { $0.calls.map(\.to) } == [["+15005550006"], ["+447700900123"], ["+441632960123"]])
        #expect(harness.channels[1].calls.first?.region == "GB")
    }

    @Test("consecutive failures open the breaker: later jobs go straight to the next provider; after the cool-down probes close it")
    func breakerOpensAndCloses() async throws {
        let breaker = CircuitBreaker.Settings(consecutiveFailures: 3, coolDown: .milliseconds(300), probes: 2)
        let primary = ScriptedChannel([], name: "primary", always: Self.failure)
        let harness = WorkerHarness(providers: [primary, ScriptedChannel([], name: "secondary")], breaker: breaker)
        for _ in 0..<6 { await harness.send(try await harness.job()) }
        #expect(primary.calls.count == 3, "the breaker opened at the third failure")
        #expect(harness.channels[1].calls.count == 6)
        await harness.worker.router.breakers!.sync()
        #expect(try await harness.store.breaker(provider: "primary")?.snapshot.state.gauge == 2)

        primary.answer(nil)
        try await Task.sleep(for: .milliseconds(350))
        for _ in 0..<4 { await harness.send(try await harness.job()) }
        #expect(primary.calls.count == 3 + 4, "two probes, then closed: it takes the traffic again")
        await harness.worker.router.breakers!.sync()
        #expect(try await harness.store.breaker(provider: "primary")?.snapshot.state == .closed)
    }

    @Test("the breaker is shared through the store: one worker's failures, and an operator's hold, steer another worker")
    func breakerShared() async throws {
        let store = MemoryStore()
        let breaker = CircuitBreaker.Settings(consecutiveFailures: 2, coolDown: .seconds(60))
        let a = WorkerHarness(
            providers: [ScriptedChannel([], name: "primary", always: Self.failure), ScriptedChannel([], name: "secondary")], breaker: breaker,
            store: store)
        let b = WorkerHarness(providers: Self.providers("primary", "secondary"), breaker: breaker, store: store)
        for _ in 0..<2 { await a.send(try await a.job()) }
        await a.worker.router.breakers!.sync()
        await b.worker.router.breakers!.sync()
        await b.send(try await b.job())
        #expect(b.channels.map(\.calls.count) == [0, 1], "worker b never called the provider worker a found failing")

        // An operator closes it by hand, then drains the secondary: both workers follow the store.
        _ = try await store.updateBreaker(provider: "primary", settings: breaker, now: Date()) { $0.override(.close, now: Date()) }
        _ = try await store.updateBreaker(provider: "secondary", settings: breaker, now: Date()) { $0.override(.open, now: Date()) }
        await b.worker.router.breakers!.sync()
        await b.send(try await b.job())
        #expect(b.channels.map(\.calls.count) == [1, 1])
    }

    @Test("every provider of the chain held open: the job waits, then ends expired without a call")
    func allOpenExpires() async throws {
        let store = MemoryStore()
        let breaker = CircuitBreaker.Settings()
        for name in ["a", "b"] {
            _ = try await store.updateBreaker(provider: name, settings: breaker, now: Date()) { $0.override(.open, now: Date()) }
        }
        let harness = WorkerHarness(providers: Self.providers("a", "b"), breaker: breaker, store: store)
        await harness.worker.router.breakers!.sync()
        let job = try await harness.job(expiresIn: 1)
        await harness.send(job)
        #expect(harness.channels.map(\.calls.count) == [0, 0])
        #expect(try await harness.status(job) == .expired)
    }

    @Test("a provider at its maxInFlight hands the next job to the next provider of the chain")
    func capacityMovesOn() async throws {
        let harness = WorkerHarness(
            providers: [ScriptedChannel([], takes: .milliseconds(300), name: "a"), ScriptedChannel([], name: "b")], maxInFlight: 1)
        let first = try await harness.job()
        let second = try await harness.job()
        harness.queue.push(first, signer: harness.keys.jobSigner)
        harness.queue.push(second, signer: harness.keys.jobSigner)
        var deliveries = harness.queue.deliveries.makeAsyncIterator()
        let firstDelivery = try #require(await deliveries.next())
        let secondDelivery = try #require(await deliveries.next())
        async let one: Void = harness.worker.process(firstDelivery)
        try await Task.sleep(for: .milliseconds(100))
        async let two: Void = harness.worker.process(secondDelivery)
        _ = await (one, two)
        #expect(harness.channels.map(\.calls.count) == [1, 1])
    }
}
