import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import HeraldWorker

/// The provider's rate handed out in delivery order, against the memory store (the shared GCRA).
@Suite("Provider pacer")
struct ProviderPacerTests {
    static let check = LimitCheck(kind: .provider, scope: "http", subject: "http", policy: RatePolicy(limit: 5, period: .seconds(1), burst: 1))

    @Test("tokens go out in ticket order, whatever order the jobs ask in, at the shared rate")
    func order() async throws {
        let store = MemoryStore()
        // Other workers have booked the next second: every job below is waiting long before the first
        // token is handed out, however slowly this machine starts their tasks.
        for _ in 0..<5 {
            _ = try await store.rateReserve(key: Self.check.key, parameters: GCRA.Parameters(Self.check.policy), now: Date().microsecondsSince1970)
        }
        let pacer = ProviderPacer(store: store, check: Self.check, clock: SystemClock(), logger: Logger(label: "test"))
        let tickets = (0..<6).map { _ in pacer.ticket() }
        let granted = Granted()
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            // Later tickets ask first.
            for index in tickets.indices.reversed() {
                group.addTask {
                    let answer = await pacer.wait(tickets[index], expiresAt: Date().addingTimeInterval(60))
                    #expect(answer == .allowed)
                    granted.order.withLock { $0.append(index) }
                }
            }
        }
        #expect(granted.order.withLock { $0 } == Array(0..<6))
        // 5/s with a burst of one and a second booked: the first token after ~1 s, then one per 200 ms.
        #expect(ContinuousClock.now - started >= .milliseconds(1950))
    }

    @Test("a job that leaves passes its place on; a job whose turn comes after its expiry is told so")
    func leavingAndExpiring() async throws {
        let slow = LimitCheck(kind: .provider, scope: "http", subject: "http", policy: RatePolicy(limit: 1, period: .seconds(10), burst: 1))
        let pacer = ProviderPacer(store: MemoryStore(), check: slow, clock: SystemClock(), logger: Logger(label: "test"))
        let first = pacer.ticket()
        let second = pacer.ticket()
        let third = pacer.ticket()
        pacer.leave(first)
        #expect(await pacer.wait(second, expiresAt: Date().addingTimeInterval(60)) == .allowed)
        // The next token is 10 s away; this job expires in half a second.
        #expect(await pacer.wait(third, expiresAt: Date().addingTimeInterval(0.5)) == .wouldExpire(limit: "sms.http.rate"))
    }
}

extension ProviderPacerTests {
    @Test("a lease asks for the waiting jobs and, unless tokens ahead were refused lately, as many again, within the lease size")
    func leaseWanted() {
        #expect(ProviderPacer.leaseWanted(waiting: 10, leaseSize: 100, ahead: true) == 20)
        #expect(ProviderPacer.leaseWanted(waiting: 10, leaseSize: 100, ahead: false) == 10)
        #expect(ProviderPacer.leaseWanted(waiting: 70, leaseSize: 100, ahead: true) == 100)
        #expect(ProviderPacer.leaseWanted(waiting: 1, leaseSize: 1, ahead: true) == 1)
        #expect(ProviderPacer.leaseWanted(waiting: 0, leaseSize: 100, ahead: true) == 0)
    }

    static func serve(_ count: Int, on pacer: ProviderPacer) async {
        let tickets = (0..<count).map { _ in pacer.ticket() }
        await withTaskGroup(of: JobLifecycle.Throttle.self) { group in
            for ticket in tickets { group.addTask { await pacer.wait(ticket, expiresAt: Date().addingTimeInterval(60)) } }
            for await answer in group { #expect(answer == .allowed) }
        }
        for ticket in tickets { pacer.leave(ticket) }
    }

    @Test("tokens leased ahead go to the jobs that come next without asking the store; the rate is spent once")
    func leasedAhead() async throws {
        // 1,000/s with a burst of 100: a lease may ask for up to 100 tokens.
        let fast = LimitCheck(kind: .provider, scope: "http", subject: "http", policy: RatePolicy(limit: 1000, period: .seconds(1), burst: 100))
        let store = MemoryStore()
        // Time stands still, so the store's answers depend on the leases alone.
        let clock = TestClock(stoppedAt: Date())
        let now = clock.now.microsecondsSince1970
        let pacer = ProviderPacer(store: store, check: fast, clock: clock, logger: Logger(label: "test"))
        func tat() async throws -> Int64 {
            try #require(try await store.rateStates(kind: "provider", subject: "http", project: nil).first).tat
        }
        func serve(_ count: Int) async { await Self.serve(count, on: pacer) }
        await serve(10)
        // One lease of 20 tokens (1 ms each): 10 for the line, 10 ahead.
        #expect(try await tat() == now + 20_000)
        // The next 10 take the spare tokens: the store is not asked.
        await serve(10)
        #expect(try await tat() == now + 20_000)
        // The 21st finds none left and leases again (2 tokens: itself and one ahead).
        await serve(1)
        #expect(try await tat() == now + 22_000)
    }

    @Test("when the tokens ahead do not fit the rate, the waiting jobs' own lease still goes through at once", .timeLimit(.minutes(1)))
    func aheadRefused() async throws {
        // 1,000/s with a burst of 20, 14 of it booked by others: six jobs wait, a lease of twelve (six
        // ahead) does not fit, one of six does.
        let check = LimitCheck(kind: .provider, scope: "http", subject: "http", policy: RatePolicy(limit: 1000, period: .seconds(1), burst: 20))
        let store = MemoryStore()
        let clock = TestClock(stoppedAt: Date())
        let now = clock.now.microsecondsSince1970
        let parameters = GCRA.Parameters(check.policy)
        for _ in 0..<14 { _ = try await store.rateDecision(key: check.key, parameters: parameters, now: now) }
        let pacer = ProviderPacer(store: store, check: check, clock: clock, logger: Logger(label: "test"))
        func tat() async throws -> Int64 {
            try #require(try await store.rateStates(kind: "provider", subject: "http", project: nil).first).tat
        }
        await Self.serve(6, on: pacer)
        // Only the six were spent, and at once: asking for twelve again would never fit while time
        // stands still.
        #expect(try await tat() == now + 20_000)
        // For a second after the refusal, leases ask for the waiting jobs' tokens only, although the
        // burst has room again 30 ms later: two jobs spend two tokens.
        // (Expected TATs start from the clock's own microseconds: `now + 30_000` can be a microsecond
        // off, a Date plus 0.030 s rounding either way, which failed this test 4 times in 30.)
        clock.advance(0.030)
        await Self.serve(2, on: pacer)
        #expect(try await tat() == clock.now.microsecondsSince1970 + 2_000)
        // After that second, leases take tokens ahead again: two jobs lease four.
        clock.advance(1.0)
        await Self.serve(2, on: pacer)
        #expect(try await tat() == clock.now.microsecondsSince1970 + 4_000)
    }
}

/// The order tokens arrived in, shared by the test's tasks.
private final class Granted: Sendable {
    let order = Mutex<[Int]>([])
}
