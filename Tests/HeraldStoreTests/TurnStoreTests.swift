import Foundation
import HeraldCore
import Testing

/// `TurnStore`: a named turn one process at a time holds among those sharing a store (which herald-api
/// runs housekeeping), on SQLite, PostgreSQL and the memory store.
@Suite("Turns", .timeLimit(.minutes(1)))
struct TurnStoreTests {
    let now: Int64 = 1_800_000_000_000

    @Test("a free turn is taken; another holder waits until its time passed; the holder renews it", arguments: StoreKind.allCases)
    func takeAndRenew(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in try await takeAndRenew(on: store) }
    }

    /// The steps on one store (a closure this long defeats the type checker's throwing inference).
    func takeAndRenew(on store: any HeraldStoreProtocol) async throws {
        #expect(try await store.turnHolder("housekeeping") == nil)
        #expect(try await store.takeTurn("housekeeping", holder: "a", until: now + 180_000, now: now))
        #expect(try await store.takeTurn("housekeeping", holder: "b", until: now + 60_000 + 180_000, now: now + 60_000) == false)
        // Renewed by its holder before its time: held for longer, still refused to b.
        #expect(try await store.takeTurn("housekeeping", holder: "a", until: now + 120_000 + 180_000, now: now + 120_000))
        #expect(try await store.turnHolder("housekeeping")?.until == now + 300_000)
        #expect(try await store.takeTurn("housekeeping", holder: "b", until: now + 299_999 + 180_000, now: now + 299_999) == false)
        #expect(try await store.turnHolder("housekeeping")?.holder == "a")
        // Not renewed: at its instant it is anyone's.
        #expect(try await store.takeTurn("housekeeping", holder: "b", until: now + 300_000 + 180_000, now: now + 300_000))
        #expect(try await store.turnHolder("housekeeping")?.holder == "b")
        #expect(try await store.takeTurn("housekeeping", holder: "a", until: now + 301_000 + 180_000, now: now + 301_000) == false)
        // Another name is another turn.
        #expect(try await store.takeTurn("other", holder: "a", until: now + 180_000, now: now))
    }

    @Test("a turn given up is free at once; only its holder can give it up", arguments: StoreKind.allCases)
    func giveUp(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            #expect(try await store.takeTurn("housekeeping", holder: "a", until: now + 180_000, now: now))
            try await store.endTurn("housekeeping", holder: "b")
            #expect(try await store.turnHolder("housekeeping")?.holder == "a")
            try await store.endTurn("housekeeping", holder: "a")
            #expect(try await store.turnHolder("housekeeping") == nil)
            #expect(try await store.takeTurn("housekeeping", holder: "b", until: now + 1_000 + 180_000, now: now + 1_000))
        }
    }

    /// The case the statement's conflict clause is for: processes starting together all try at once,
    /// each through its own connections.
    @Test("processes trying at once: exactly one holds the turn", arguments: StoreKind.allCases)
    func race(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            var stores = [first]
            for _ in 0..<3 { stores.append(try await fixture.open()) }
            let contenders = stores
            for round in 0..<5 {
                let name = "turn-\(round)"
                let won = try await withThrowingTaskGroup(of: String?.self) { group in
                    for index in 0..<16 {
                        let store = contenders[index % contenders.count]
                        group.addTask { try await store.takeTurn(name, holder: "p\(index)", until: now + 180_000, now: now) ? "p\(index)" : nil }
                    }
                    return try await group.reduce(into: [String]()) { if let holder = $1 { $0.append(holder) } }
                }
                #expect(won.count == 1, "round \(round): \(won)")
                #expect(try await first.turnHolder(name)?.holder == won.first)
            }
            for store in stores.dropFirst() { await fixture.tearDown(store) }
        }
    }
}
