import Foundation
import HeraldCore
import HeraldStore
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

/// The order tokens arrived in, shared by the test's tasks.
private final class Granted: Sendable {
    let order = Mutex<[Int]>([])
}
