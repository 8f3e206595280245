import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Rate-limit state, run against SQLite, PostgreSQL and the memory store.
@Suite("Rate-limit state")
struct RateLimitStoreTests {
    @Test("the store's single statement decides exactly as the GCRA model, event by event", arguments: StoreKind.allCases)
    func matchesModel(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            var generator = SystemRandomNumberGenerator()
            for policyText in ["3/1m", "10/1s burst 2", "1000/1h burst 50", "7/10s"] {
                let parameters = GCRA.Parameters(RatePolicy.parse(policyText)!)
                let key = "number:p:+1|\(policyText)"
                var modelTAT: Int64?
                var now: Int64 = 1_800_000_000_000_000
                for _ in 0..<300 {
                    now += Int64.random(in: 0...(parameters.interval * 2), using: &generator)
                    let expected = GCRA.decide(tat: modelTAT, now: now, parameters: parameters)
                    if expected.allowed { modelTAT = expected.tat }
                    let actual = try await store.rateDecision(key: key, parameters: parameters, now: now)
                    #expect(actual == expected, "\(policyText) at \(now)")
                }
            }
        }
    }

    @Test("several keys decided at once answer as the model checking them in order: the first refusal, nothing spent", arguments: StoreKind.allCases)
    func severalKeysMatchModel(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            var generator = SystemRandomNumberGenerator()
            let keys = ["3/1m", "10/1s burst 2", "5/10s", "1000/1h burst 50"].map { policy in
                (key: "number:p:+1|\(policy)", parameters: GCRA.Parameters(RatePolicy.parse(policy)!))
            }
            var model: [String: Int64] = [:]
            var now: Int64 = 1_800_000_000_000_000
            var refusals = 0
            for step in 0..<400 {
                now += Int64.random(in: 0...1_500_000, using: &generator)
                let entries = Array(keys.shuffled(using: &generator).prefix(Int.random(in: 2...4, using: &generator)))
                var trial = model
                var expected: (index: Int, decision: GCRA.Decision)?
                for (index, entry) in entries.enumerated() {
                    let decision = GCRA.decide(tat: trial[entry.key], now: now, parameters: entry.parameters)
                    guard decision.allowed else {
                        expected = (index, decision)
                        break
                    }
                    trial[entry.key] = decision.tat
                }
                if expected == nil { model = trial } else { refusals += 1 }
                let actual = try await store.rateDecisions(entries, now: now)
                #expect(actual?.index == expected?.index, "step \(step)")
                #expect(actual?.decision == expected?.decision, "step \(step)")
            }
            // Both paths ran: sends allowed at once and refusals decided again key by key.
            #expect(refusals > 20 && refusals < 380)
        }
    }

    @Test("reservations book consecutive slots one spacing apart, also when two processes reserve at once", arguments: StoreKind.allCases)
    func reservations(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let parameters = GCRA.Parameters(RatePolicy(limit: 1, period: .seconds(3), burst: 1))
            let now: Int64 = 1_800_000_000_000_000
            let slots = try await withThrowingTaskGroup(of: Int64.self) { group in
                for index in 0..<20 {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask { try await store.rateReserve(key: "spacing:p:+15555550100|1/3s", parameters: parameters, now: now) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The first goes now, each next one 3 s later: no two share a slot.
            #expect(slots.sorted() == (0..<20).map { now + Int64($0) * 3_000_000 })
            // A reservation is a booking: a plain decision now is refused until the booked slots pass.
            #expect(try await first.rateDecision(key: "spacing:p:+15555550100|1/3s", parameters: parameters, now: now).allowed == false)
            await fixture.tearDown(second)
        }
    }

    @Test("concurrent decisions from two processes never allow more than the policy", arguments: StoreKind.allCases)
    func concurrentAcrossConnections(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let parameters = GCRA.Parameters(RatePolicy.parse("3/10m")!)
            let now = Date().microsecondsSince1970
            let allowed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<200 {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask { try await store.rateDecision(key: "number:p:+15555550100|3/10m", parameters: parameters, now: now).allowed }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(allowed == 3)
            await fixture.tearDown(second)
        }
    }

    /// What herald-api's leases of busy limits (`LimitLeases`) rely on: a lease of n events is one
    /// decision with n times the spacing, and lapsed tokens go back as one refund of n.
    @Test("a lease of several events is one decision and its refund gives exactly those back, as in the model", arguments: StoreKind.allCases)
    func leasesMatchModel(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            var generator = SystemRandomNumberGenerator()
            let parameters = GCRA.Parameters(RatePolicy.parse("640/1h")!)
            let key = "project:p:p|640/1h"
            var modelTAT: Int64?
            var now: Int64 = 1_800_000_000_000_000
            var granted = 0
            for step in 0..<300 {
                now += Int64.random(in: 0...(parameters.interval * 20), using: &generator)
                // Leases of up to 100 and lapsed tokens of up to 20 given back: the allowance runs out and refills.
                let lease = parameters.forCost(Int64.random(in: 1...(step % 3 == 2 ? 20 : 100), using: &generator))
                if step % 3 == 2, let tat = modelTAT {
                    modelTAT = GCRA.refund(tat: tat, now: now, parameters: lease)
                    try await store.rateRefund(key: key, parameters: lease, now: now)
                } else {
                    let expected = GCRA.decide(tat: modelTAT, now: now, parameters: lease)
                    if expected.allowed {
                        modelTAT = expected.tat
                        granted += 1
                    }
                    #expect(try await store.rateDecision(key: key, parameters: lease, now: now) == expected, "step \(step)")
                }
            }
            #expect(try await store.rateStates(kind: "project", subject: "p", project: "p").first?.tat == modelTAT)
            #expect(granted > 20 && granted < 200, "both grants and refusals were checked (\(granted) granted)")
        }
    }

    @Test("the limiter spends all checks or none", arguments: StoreKind.allCases)
    func allOrNothing(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let limiter = RateLimiter(store: store)
            let phone = try PhoneNumber(parsing: "+15555550100")
            let wide = LimitCheck(kind: .ip, scope: "p", subject: "203.0.113.7", policy: RatePolicy.parse("100/1m")!)
            let narrow = LimitCheck(kind: .number, scope: "p", subject: phone.e164, policy: RatePolicy.parse("1/1h")!)
            // One instant for every step: the outcome must not depend on how fast the machine is.
            let now = Date()
            #expect(try await limiter.admit([wide, narrow], now: now) == nil)
            let refusal = try #require(try await limiter.admit([wide, narrow], now: now))
            #expect(refusal.check == narrow)
            #expect(refusal.retryAfter > .seconds(3500))
            // The refused request gave its IP event back: only one of 100 is spent.
            let ip = try await store.rateStates(kind: "ip", subject: "203.0.113.7", project: nil)
            let remaining = GCRA.remaining(tat: ip.first?.tat, now: now.microsecondsSince1970, parameters: GCRA.Parameters(wide.policy))
            #expect(remaining == 99)
        }
    }

    @Test("support lookups match the exact subject, IPv6 colons included; reset and purge forget keys", arguments: StoreKind.allCases)
    func lookupResetPurge(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date().microsecondsSince1970
            let policy = GCRA.Parameters(RatePolicy.parse("5/1h")!)
            for key in ["ip:a:2001:db8:0:1:0:0:0:0/64|5/1h", "ip:b:2001:db8:0:1:0:0:0:0/64|5/1h", "ip:a:0:1:0:0:0:0/64|5/1h", "number:a:+1|5/1h"] {
                _ = try await store.rateDecision(key: key, parameters: policy, now: now)
            }
            #expect(try await store.rateStates(kind: "ip", subject: "2001:db8:0:1:0:0:0:0/64", project: nil).count == 2)
            #expect(try await store.rateStates(kind: "ip", subject: "2001:db8:0:1:0:0:0:0/64", project: "a").count == 1)
            #expect(try await store.rateStates(kind: "ip", subject: "0:1:0:0:0:0/64", project: nil).count == 1)
            #expect(try await store.resetRates(kind: "ip", subject: "2001:db8:0:1:0:0:0:0/64", project: nil) == 2)
            #expect(try await store.rateStates(kind: "ip", subject: "2001:db8:0:1:0:0:0:0/64", project: nil).isEmpty)
            // Keys whose TAT has passed allow as much as missing ones: purge drops them.
            #expect(try await store.purgeRates(before: now + 3_600_000_000) == 2)
            #expect(try await store.rateStates(kind: "number", subject: "+1", project: nil).isEmpty)
        }
    }

    @Test("support lookups read a key range: a longer subject, a longer project and a longer kind never match", arguments: StoreKind.allCases)
    func lookupRanges(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date().microsecondsSince1970
            let policy = GCRA.Parameters(RatePolicy.parse("5/1h")!)
            let keys = [
                "number:a:+1|5/1h", "number:a:+1|10/1d", "number:a:+10|5/1h", "number:ab:+1|5/1h", "numbers:a:+1|5/1h", "number:a:+1:x|5/1h",
            ]
            for key in keys { _ = try await store.rateDecision(key: key, parameters: policy, now: now) }
            #expect(try await store.rateStates(kind: "number", subject: "+1", project: "a").map(\.key) == ["number:a:+1|10/1d", "number:a:+1|5/1h"])
            #expect(try await store.rateStates(kind: "number", subject: "+1", project: nil).count == 3)
            #expect(try await store.rateStates(kind: "number", subject: "+10", project: nil).map(\.key) == ["number:a:+10|5/1h"])
            #expect(try await store.rateStates(kind: "numbers", subject: "+1", project: "a").count == 1)
            #expect(try await store.resetRates(kind: "number", subject: "+1", project: "a") == 2)
            #expect(try await store.rateStates(kind: "number", subject: "+1", project: nil).map(\.key) == ["number:ab:+1|5/1h"])
            #expect(try await store.resetRates(kind: "number", subject: "+1", project: "a") == 0)
        }
    }

    /// Without a project the store looks the subject up in each project that has keys of the kind, found
    /// one after another; these projects sort before, between and after each other's separators.
    @Test("a lookup without a project finds the subject in every project, in key order, and nothing else", arguments: StoreKind.allCases)
    func lookupAcrossProjects(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now = Date().microsecondsSince1970
            let policy = GCRA.Parameters(RatePolicy.parse("5/1h")!)
            let projects = ["", "a", "a-b", "a.b", "ab", "b", "z~"]
            var keys: [String] = []
            for project in projects {
                keys += ["number:\(project):+1|5/1h", "number:\(project):+2|5/1h", "number:\(project):+10|5/1h", "checks:\(project):+1|5/1h"]
            }
            // Not keys Herald writes, in the kind's range: stepped over.
            keys += ["number:", "number:x", "number:x:+1"]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for key in keys { group.addTask { _ = try await store.rateDecision(key: key, parameters: policy, now: now) } }
                try await group.waitForAll()
            }
            let found = try await store.rateStates(kind: "number", subject: "+1", project: nil).map(\.key)
            #expect(found == projects.map { "number:\($0):+1|5/1h" }.sorted())
            #expect(try await store.rateStates(kind: "checks", subject: "+1", project: nil).count == projects.count)
            #expect(try await store.resetRates(kind: "number", subject: "+2", project: nil) == projects.count)
            #expect(try await store.rateStates(kind: "number", subject: "+2", project: nil).isEmpty)
        }
    }

    @Test("purge walks every chunk of keys: passed ones go, live ones stay, whatever their order", arguments: StoreKind.allCases)
    func purgeAcrossChunks(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now: Int64 = 1_800_000_000_000_000
            let short = GCRA.Parameters(RatePolicy.parse("60/1m")!)  // tat = now + 1 s
            let long = GCRA.Parameters(RatePolicy.parse("1/1d")!)  // tat = now + 1 d
            let count = 2 * PurgePacing.rateKeys.chunk + 100  // more than two chunks of the whole walk
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for index in stride(from: lane, to: count, by: 8) {
                            // Interleaved so that every chunk holds both kinds.
                            let parameters = index.isMultiple(of: 3) ? long : short
                            _ = try await store.rateDecision(key: "number:p:+1555\(index)|x", parameters: parameters, now: now)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let live = (0..<count).filter { $0.isMultiple(of: 3) }.count
            #expect(try await store.purgeRates(before: now + 60_000_000) == count - live)
            #expect(try await store.rateStates(kind: "number", subject: "+15553", project: nil).count == 1)
            #expect(try await store.rateStates(kind: "number", subject: "+15554", project: nil).isEmpty)
            #expect(try await store.purgeRates(before: now + 60_000_000) == 0)
        }
    }

    @Test(
        "one step of the walk looks at the keys after its cursor in key order, at most its limit, and deletes only passed ones",
        arguments: StoreKind.allCases)
    func purgeStep(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let now: Int64 = 1_800_000_000_000_000
            let short = GCRA.Parameters(RatePolicy.parse("60/1m")!)  // tat = now + 1 s
            let long = GCRA.Parameters(RatePolicy.parse("1/1d")!)  // tat = now + 1 d
            // Written out of order; k0, k2, k4 … pass, k1, k3 … stay.
            for index in [7, 3, 0, 9, 5, 1, 8, 2, 6, 4] {
                _ = try await store.rateDecision(key: "number:p:k\(index)|x", parameters: index.isMultiple(of: 2) ? short : long, now: now)
            }
            let later = now + 60_000_000
            let first = try await store.purgeRates(after: "", limit: 4, before: later)
            #expect(first == RateKeyChunk(walked: 4, deleted: 2, last: "number:p:k3|x"))
            // Keys the step did not reach stay, passed or not.
            #expect(try await store.rateStates(kind: "number", subject: "k4", project: nil).count == 1)
            #expect(try await store.rateStates(kind: "number", subject: "k1", project: nil).count == 1)
            #expect(try await store.rateStates(kind: "number", subject: "k0", project: nil).isEmpty)
            let second = try await store.purgeRates(after: "number:p:k3|x", limit: 4, before: later)
            #expect(second == RateKeyChunk(walked: 4, deleted: 2, last: "number:p:k7|x"))
            // The last step is short: it reached the end.
            let third = try await store.purgeRates(after: "number:p:k7|x", limit: 4, before: later)
            #expect(third == RateKeyChunk(walked: 2, deleted: 1, last: "number:p:k9|x"))
            #expect(try await store.purgeRates(after: "number:p:k9|x", limit: 4, before: later) == RateKeyChunk(walked: 0, deleted: 0, last: nil))
            // Nothing passed is left; every live key is.
            #expect(try await store.purgeRates(before: later) == 0)
            for index in stride(from: 1, to: 10, by: 2) {
                #expect(try await store.rateStates(kind: "number", subject: "k\(index)", project: nil).count == 1)
            }
        }
    }

    @Test("prefix velocity trips into a block that lookups see until lifted", arguments: StoreKind.allCases)
    func blocks(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            let settings = PrefixVelocity.Settings(enabled: true, window: .seconds(600), multiple: 10, minimumSends: 5, blockFor: .seconds(3600))
            let now = Date()
            var trips: [Bool] = []
            for _ in 0..<6 { trips.append(try await store.observePrefix(projectID: "p", prefix: "+88216", settings: settings, now: now)) }
            #expect(trips == [false, false, false, false, false, true])
            let block = try #require(try await store.prefixBlock(projectID: "p", prefix: "+88216", now: now))
            #expect(abs(block.until.timeIntervalSince(now) - 3600) < 1)
            #expect(block.reason.contains("6 sends in 10m"))
            #expect(try await store.prefixBlock(projectID: "other", prefix: "+88216", now: now) == nil)
            #expect(try await store.prefixBlock(projectID: "p", prefix: "+88216", now: now.addingTimeInterval(3601)) == nil)
            #expect(try await store.prefixBlocks(now: now).map(\.prefix) == ["+88216"])
            #expect(try await store.liftPrefixBlock(projectID: "p", prefix: "+88216"))
            #expect(try await store.prefixBlock(projectID: "p", prefix: "+88216", now: now) == nil)
            // Lifting restarts the count: the next send does not trip again at once.
            #expect(try await store.observePrefix(projectID: "p", prefix: "+88216", settings: settings, now: now) == false)
            #expect(try await store.liftPrefixBlock(projectID: "p", prefix: "+88216") == false)
        }
    }

    @Test(
        "conversion per minute, region and provider counts SMS sessions and verified ones, not test numbers, with their longest code life",
        arguments: StoreKind.allCases)
    func conversion(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { _, store in
            // Half a minute into the current minute, so that 50 s back is the minute before.
            let minute = (Date().timeIntervalSince1970 / 60).rounded(.down)
            let now = Date(timeIntervalSince1970: minute * 60 + 30)
            func session(
                _ region: String, sms: Bool, verified: Bool, created: TimeInterval = 0, ttl: TimeInterval = 300, provider: String? = nil
            ) async throws {
                // Ids as sends make them: the report finds sessions by the time their ids start with.
                let id = SessionToken.issue(at: now.addingTimeInterval(created)).storageID
                let job = UUID()
                try await store.insertSession(
                    VerificationSession(
                        id: id, projectID: "p", phoneNumber: "+1", region: region, codeHash: Data(), createdAt: now.addingTimeInterval(created),
                        expiresAt: now.addingTimeInterval(created + ttl), maxAttempts: 5, jobID: sms ? job : nil))
                if let provider {
                    // The worker's claim names the provider the SMS goes through.
                    try await store.recordPending(jobID: job, projectID: "p", type: .sms, destination: "+1", now: now)
                    _ = try await store.claimDelivery(
                        jobID: job, projectID: "p", type: .sms, destination: "+1", owner: "w",
                        description: DeliveryDescription(template: "verification", locale: "en", provider: provider, producer: nil), now: now,
                        reclaimInDoubt: false)
                }
                if verified { _ = try await store.consumeSession(id: id, at: now) }
            }
            try await session("US", sms: true, verified: true, provider: "twilio")
            try await session("US", sms: true, verified: true, provider: "vonage")
            try await session("US", sms: true, verified: false, ttl: 600)
            try await session("GB", sms: true, verified: false)
            try await session("US", sms: false, verified: true)
            // Before the window, still open: not counted. In the window and already expired: counted.
            try await session("GB", sms: true, verified: true, created: -120)
            try await session("FR", sms: true, verified: false, created: -50, ttl: 30)
            let rows = try await store.conversion(since: now.addingTimeInterval(-60))
            #expect(
                rows == [
                    ConversionCount(minute: Int64(minute) - 1, region: "FR", sent: 1, verified: 0, longestLife: 30_000),
                    ConversionCount(minute: Int64(minute), region: "GB", sent: 1, verified: 0, longestLife: 300_000),
                    ConversionCount(minute: Int64(minute), region: "US", sent: 1, verified: 0, longestLife: 600_000),
                    ConversionCount(minute: Int64(minute), region: "US", provider: "twilio", sent: 1, verified: 1, longestLife: 300_000),
                    ConversionCount(minute: Int64(minute), region: "US", provider: "vonage", sent: 1, verified: 1, longestLife: 300_000),
                ])
        }
    }

    @Test("several decisions at once from two processes are all-or-nothing: exactly the narrow allowance passes", arguments: StoreKind.allCases)
    func concurrentBatches(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let wide = (key: "ip:p:203.0.113.7|1000/1m", parameters: GCRA.Parameters(RatePolicy.parse("1000/1m")!))
            let narrow = (key: "number:p:+15555550100|3/10m", parameters: GCRA.Parameters(RatePolicy.parse("3/10m")!))
            let now = Date().microsecondsSince1970
            let allowed = try await withThrowingTaskGroup(of: Bool.self) { group in
                // 48 at once, far more than each process's pooled connections.
                for index in 0..<48 {
                    let store = index.isMultiple(of: 2) ? first : second
                    // Half the requests check the keys in the other order: no deadlock may lose one.
                    let entries = index.isMultiple(of: 4) ? [wide, narrow] : [narrow, wide]
                    group.addTask { try await store.rateDecisions(entries, now: now) == nil }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(allowed == 3)
            let ip = try await first.rateStates(kind: "ip", subject: "203.0.113.7", project: nil)
            #expect(GCRA.remaining(tat: ip.first?.tat, now: now, parameters: wide.parameters) == 997)
            await fixture.tearDown(second)
        }
    }

    @Test("prefix velocity counts every send when two processes observe at once", arguments: StoreKind.allCases)
    func concurrentVelocity(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture, first in
            let second = try await fixture.open()
            let settings = PrefixVelocity.Settings(enabled: true, window: .seconds(600), multiple: 10, minimumSends: 20, blockFor: .seconds(60))
            let now = Date()
            let trips = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<30 {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask { try await store.observePrefix(projectID: "p", prefix: "+4479", settings: settings, now: now) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            // Sends 21 to 30 are over the threshold of 20: each reports the trip.
            #expect(trips == 10)
            #expect(try await second.prefixBlock(projectID: "p", prefix: "+4479", now: now)?.reason.hasPrefix("30 sends") == true)
            await fixture.tearDown(second)
        }
    }
}
