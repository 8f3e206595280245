import Crypto
import Foundation
import HeraldCore
import HeraldTesting

/// The providers suite: failover between two providers under load, and each provider adapter's worker
/// CPU per job beside the generic gateway's.
extension Bench {
    /// `sms.providers` for the fakes (in order), each in the type its dialect speaks, and a breaker
    /// whose cool-down lets a recovery show within the run.
    static func providerLines(_ providers: [(String, FakeSMSProvider)], callbackBase: String? = nil) -> [String] {
        var lines = ["breaker: {consecutiveFailures: 5, coolDown: 3s, probes: 3}", "providers:"]
        if let callbackBase { lines.insert("callbackBaseUrl: \(callbackBase)", at: 0) }
        for (name, fake) in providers {
            switch fake.dialect {
            case .twilio(let sid, let token):
                lines.append(
                    "  - {name: \(name), type: twilio, baseUrl: \"\(fake.baseURL)\", accountSid: \(sid), authToken: \(token), from: \"+15005550006\", maxInFlight: 1000}"
                )
            case .vonage(let key, let secret, let signature, let method):
                lines.append(
                    "  - {name: \(name), type: vonage, baseUrl: \"\(fake.baseURL)\", apiKey: \(key), apiSecret: \(secret), signatureSecret: \(signature), signatureMethod: \(method.rawValue), from: Herald, maxInFlight: 1000}"
                )
            case .telnyx(let key, let signing):
                lines.append(
                    "  - {name: \(name), type: telnyx, baseUrl: \"\(fake.baseURL)\", apiKey: \(key), publicKey: \"\(signing.publicKey.rawRepresentation.base64EncodedString())\", from: \"+15005550006\", maxInFlight: 1000}"
                )
            }
        }
        return lines
    }

    static func twilioFake() async throws -> FakeSMSProvider {
        try await FakeSMSProvider.start(.twilio(accountSid: "AC" + String(repeating: "c3", count: 16), authToken: "bench-token"))
    }

    static func vonageFake() async throws -> FakeSMSProvider {
        try await FakeSMSProvider.start(.vonage(apiKey: "benchkey", apiSecret: "benchsecret", signatureSecret: "benchsig", method: .sha256))
    }

    static func telnyxFake() async throws -> FakeSMSProvider {
        try await FakeSMSProvider.start(.telnyx(apiKey: "KEYBENCH", signingKey: Curve25519.Signing.PrivateKey()))
    }

    /// `rate` sends/s for `failoverSeconds` through a Twilio primary and a Telnyx secondary, the primary
    /// answering 503 for `failoverOutage` seconds from the middle on: every accepted send at exactly one
    /// provider once, the time from the first failure to the breaker opening (polled from the worker's
    /// `herald_sms_provider_state`), and request → provider p99 for the sends made during the outage.
    func failover() async throws {
        let primary = try await Self.twilioFake()
        let secondary = try await Self.telnyxFake()
        let stack = try await BenchStack.start(limits: Self.noLimits) {
            // Callbacks name the job, which the count of distinct jobs reads (the fakes send no receipts here).
            $0.smsExtra = Self.providerLines([("twilio", primary), ("telnyx", secondary)], callbackBase: "http://127.0.0.1:\($0.apiPort)")
        }
        defer {
            Task {
                await primary.stop()
                await secondary.stop()
            }
        }
        let total = rate * failoverSeconds
        let outageStart = failoverSeconds / 2 - failoverOutage / 2
        print(
            "failover: \(rate) sends/s for \(failoverSeconds) s through twilio then telnyx, twilio answering 503 from \(outageStart) s for \(failoverOutage) s"
        )
        let requested = Locked([String: ContinuousClock.Instant]())
        let refused = Locked(0)
        let opened = Locked<ContinuousClock.Instant?>(nil)
        let start = ContinuousClock.now
        let failFrom = start + .seconds(outageStart)
        let poller = Task {
            let client = HeraldClient(port: stack.settings.metricsPort)
            while Task.isCancelled == false {
                if let answer = try? await client.get("/metrics"),
                    String(decoding: answer.body, as: UTF8.self).contains(#"herald_sms_provider_state{provider="twilio"} 2"#)
                {
                    opened.withLock { if $0 == nil { $0 = .now } }
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let interval = Duration.seconds(1) / rate
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                try? await Task.sleep(until: start + interval * index)
                if index == outageStart * rate {
                    primary.behave(.status(503), until: Date().addingTimeInterval(Double(failoverOutage)))
                }
                let phone = BenchStack.phone(60_000_000 + index)
                group.addTask {
                    let sent = ContinuousClock.now
                    let answer = try? await stack.client.post(
                        "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": phone])
                    if answer?.status == 200 { requested.withLock { $0[phone] = sent } } else { refused.withLock { $0 += 1 } }
                }
            }
        }
        let accepted = requested.withLock { $0.count }
        _ = await eventually(timeout: .seconds(120)) { primary.accepted.count + secondary.accepted.count >= accepted }
        try await Task.sleep(for: .seconds(2))
        poller.cancel()
        let messages = primary.accepted + secondary.accepted
        let jobs = messages.compactMap(\.jobID)
        let byNumber = Dictionary(grouping: messages, by: \.to)
        let duplicates = byNumber.values.filter { $0.count > 1 }.count
        let lost = requested.withLock { Set($0.keys) }.subtracting(byNumber.keys).count
        print(
            "    \(accepted) accepted (\(refused.withLock { $0 }) refused): \(primary.accepted.count) at twilio, \(secondary.accepted.count) at telnyx; "
                + "\(lost) lost, \(duplicates) sent twice, \(Set(jobs).count) distinct jobs")
        let failed = primary.receivedCount - primary.accepted.count
        if let opened = opened.withLock({ $0 }) {
            print(
                String(
                    format: "    breaker open %.0f ms after the first 503 (%d calls answered 503 in all)", (opened - failFrom).seconds * 1000, failed)
            )
        } else {
            print("    the breaker never showed open on the worker's /metrics (\(failed) calls answered 503)")
        }
        let arrivals = stack.arrivals
        var during: [Double] = []
        var outside: [Double] = []
        let failEnd = failFrom + .seconds(failoverOutage)
        for message in messages {
            guard let sent = requested.withLock({ $0[message.to] }) else { continue }
            let took = (arrivals.instant(for: message.acceptedAt) - sent).seconds * 1000
            if sent >= failFrom && sent < failEnd { during.append(took) } else { outside.append(took) }
        }
        print(
            String(
                format: "    request → provider: p50 %.1f ms, p99 %.1f ms during the outage (%d sends); p50 %.1f ms, p99 %.1f ms outside it",
                Self.percentile(during, 0.5), Self.percentile(during, 0.99), during.count, Self.percentile(outside, 0.5),
                Self.percentile(outside, 0.99)))
        await stack.stop()
    }

    /// Each adapter's herald-sms-worker CPU per job beside the generic gateway's: for each of Twilio,
    /// Vonage and Telnyx, a stack of it and one of the gateway each get a `backlog` queued, then both
    /// workers drain at the same moment, `runs` times (drained together, both see the same machine).
    func adapterCost() async throws {
        let jobs = min(backlog, 5_000)
        print("adapters: herald-sms-worker CPU per job, each adapter beside the generic gateway draining \(jobs) jobs at the same time, \(runs) runs")
        for (name, make) in [("twilio", Self.twilioFake), ("vonage", Self.vonageFake), ("telnyx", Self.telnyxFake)] {
            let fake = try await make()
            let adapter = try await BenchStack.start(limits: Self.noLimits, worker: false, workerInFlight: workerConcurrency) {
                $0.smsExtra = Self.providerLines([(name, fake)])
            }
            let gateway = try await BenchStack.start(limits: Self.noLimits, worker: false, workerInFlight: workerConcurrency)
            var ratios: [Double] = []
            var costs: [(Double, Double)] = []
            for run in 1...runs {
                async let queuedA: Void = queueSends(jobs, through: adapter, offset: 70_000_000 + 20_000 * run)
                async let queuedG: Void = queueSends(jobs, through: gateway, offset: 80_000_000 + 20_000 * run)
                _ = try await (queuedA, queuedG)
                let fakeBefore = fake.receivedCount
                let gatewayBefore = gateway.gateway.receivedCount
                async let a = drainCost(adapter, jobs: jobs) { fake.receivedCount - fakeBefore }
                async let g = drainCost(gateway, jobs: jobs) { gateway.gateway.receivedCount - gatewayBefore }
                let (mine, base) = try await (a, g)
                costs.append((mine, base))
                ratios.append(mine / max(1, base))
            }
            await adapter.stop()
            await gateway.stop()
            await fake.stop()
            let sorted = costs.sorted { $0.0 < $1.0 }
            print(
                String(
                    format: "    %@: %.0f µs per job, gateway %.0f µs (medians): ", name, sorted[sorted.count / 2].0,
                    costs.map(\.1).sorted()[costs.count / 2]) + Self.summary(ratios, of: "paired drains (adapter ÷ gateway)"))
        }
    }

    /// Starts `stack`'s worker, waits until `delivered()` reaches `jobs`, stops it: its CPU per job (µs).
    private func drainCost(_ stack: BenchStack, jobs: Int, _ delivered: @escaping @Sendable () -> Int) async throws -> Double {
        let worker = try stack.startWorker()
        guard await eventually(timeout: .seconds(600), { delivered() >= jobs }) else {
            throw TestFailure("a worker did not drain its backlog: \(delivered()) of \(jobs)")
        }
        let cost = cpuSeconds(worker.pid) / Double(jobs) * 1_000_000
        _ = await worker.terminate()
        stack.workers.withLock { $0.removeAll { $0 === worker } }
        return cost
    }
}
