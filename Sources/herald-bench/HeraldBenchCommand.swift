import ArgumentParser
import Foundation
import HeraldAMQP
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldTesting
import Synchronization

/// herald-bench: starts a stack against a fast fake gateway and prints throughput and latency figures.
/// Figures depend on the machine; nothing here is a pass/fail threshold.
@main
struct HeraldBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench", abstract: "Measure broker confirms, API throughput, enqueue→gateway latency and memory.")

    @Option(help: "Messages for the raw publish-with-confirms run.") var publishCount = 20_000
    @Option(help: "Confirms in flight during the raw publish run.") var window = 500
    @Option(help: "Seconds of load at concurrency 64.") var throughputSeconds = 10
    @Option(help: "Requests per second for the latency run.") var rate = 500
    @Option(help: "Seconds of the latency run.") var latencySeconds = 10

    func run() async throws {
        print("herald-bench on \(ProcessInfo.processInfo.activeProcessorCount) cores; broker \(TestBroker.endpoint.redacted)")
        try await rawPublish()
        let stack = try await BenchStack.start()
        do {
            try await throughput(stack)
            try await latency(stack)
            print("(d) memory after the runs: herald-api RSS \(rss(stack.api.pid)) (peak \(peak(stack.api.pid))); herald-sms-worker RSS \(rss(stack.worker.pid)) (peak \(peak(stack.worker.pid)))")
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// (a) One librabbitmq publisher, persistent messages to a quorum queue, `window` confirms in flight.
    func rawPublish() async throws {
        let topology = TestBroker.topology(exchange: TestBroker.uniqueExchange("bench"))
        try await TestBroker.withTopology(topology) { _ in
            let publisher = try await TestBroker.connection(.publisher, name: "bench", logger: quietLogger(), publishTimeout: .seconds(30))
            let body = Data(repeating: UInt8(ascii: "x"), count: 400)
            for (label, inFlight) in [("1 in flight (one round trip each)", 1), ("\(window) in flight", window)] {
                let count = inFlight == 1 ? min(publishCount, 2000) : publishCount
                let started = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<count {
                        if index >= inFlight { try await group.next() }
                        group.addTask {
                            try await publisher.publish(
                                AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "sms", body: body, messageID: "m\(index)"))
                        }
                    }
                    try await group.waitForAll()
                }
                let seconds = (ContinuousClock.now - started).seconds
                print(String(format: "(a) raw publish with confirms, %@: %d messages in %.2f s = %.0f msg/s", label, count, seconds, Double(count) / seconds))
            }
            await publisher.shutdown()
        }
    }

    /// (b) sendVerificationCode answered per second with 64 requests always in flight.
    func throughput(_ stack: BenchStack) async throws {
        let deadline = ContinuousClock.now + .seconds(throughputSeconds)
        let counter = Locked((ok: 0, failed: 0))
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<64 {
                group.addTask {
                    var index = 0
                    while ContinuousClock.now < deadline {
                        let answer = try await stack.client.post(
                            "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey,
                            json: ["phoneNumber": BenchStack.phone(worker * 100_000 + index)])
                        counter.withLock { answer.status == 200 ? ($0.ok += 1) : ($0.failed += 1) }
                        index += 1
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = (ContinuousClock.now - started).seconds
        let (ok, failed) = counter.withLock { ($0.ok, $0.failed) }
        print(String(format: "(b) sendVerificationCode at concurrency 64: %d accepted in %.1f s = %.0f req/s (%d refused)", ok, seconds, Double(ok) / seconds, failed))
        // Let the worker drain before the latency run.
        _ = await eventually(timeout: .seconds(120)) { stack.gateway.received.count >= ok }
        print("    worker drained: gateway received \(stack.gateway.received.count) SMS")
    }

    /// (c) Open-loop load at a fixed rate: time from the API's confirmed answer to the gateway's receipt.
    func latency(_ stack: BenchStack) async throws {
        let total = rate * latencySeconds
        let base = 50_000_000
        let answered = Locked([String: (requested: ContinuousClock.Instant, confirmed: ContinuousClock.Instant)]())
        let arrivalsBefore = stack.gateway.received.count
        let interval = Duration.seconds(1) / rate
        let start = ContinuousClock.now
        let refused = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                try? await Task.sleep(until: start + interval * index)
                let phone = BenchStack.phone(base + index)
                group.addTask {
                    let requested = ContinuousClock.now
                    let answer = try? await stack.client.post(
                        "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": phone])
                    if answer?.status == 200 {
                        answered.withLock { $0[phone] = (requested, .now) }
                    } else {
                        refused.withLock { $0 += 1 }
                    }
                }
            }
        }
        let sentIn = (ContinuousClock.now - start).seconds
        _ = await eventually(timeout: .seconds(60)) { stack.gateway.received.count - arrivalsBefore >= answered.withLock { $0.count } }
        let arrivals = stack.arrivalInstants()
        // From the request leaving the client (the API then publishes and waits for the confirm) to the
        // SMS reaching the gateway; and the API's own answer time. The worker often gets the job before
        // the client has the API's answer, so "answer → gateway" alone would be meaningless.
        var endToEnd: [Double] = []
        var answerTimes: [Double] = []
        for (phone, times) in answered.withLock({ $0 }) {
            answerTimes.append((times.confirmed - times.requested).seconds * 1000)
            if let arrived = arrivals[phone] { endToEnd.append((arrived - times.requested).seconds * 1000) }
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        print(String(format: "(c) at %d req/s for %d s (offered in %.1f s): %d confirmed, %d refused",
                     rate, latencySeconds, sentIn, answerTimes.count, refused.withLock { $0 }))
        print(String(format: "    request → SMS at gateway: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d delivered)",
                     percentile(endToEnd, 0.5), percentile(endToEnd, 0.99), endToEnd.max() ?? .nan, endToEnd.count))
        print(String(format: "    request → API answer (after the broker's confirm): p50 %.1f ms, p99 %.1f ms",
                     percentile(answerTimes, 0.5), percentile(answerTimes, 0.99)))
    }

    func rss(_ pid: Int32) -> String { statusField(pid, "VmRSS") }
    func peak(_ pid: Int32) -> String { statusField(pid, "VmHWM") }

    func statusField(_ pid: Int32, _ field: String) -> String {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return "?" }
        let kilobytes = Double(line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0)
        return String(format: "%.0f MiB", kilobytes / 1024)
    }
}

/// herald-api and herald-sms-worker processes with a fast in-process gateway.
struct BenchStack: Sendable {
    let settings: TestConfiguration
    let gateway: FakeSMSGateway
    let api: HeraldProcess
    let worker: HeraldProcess
    let client: HeraldClient
    /// Gateway arrivals by destination, with monotonic timestamps.
    let arrivals: ArrivalClock

    final class ArrivalClock: Sendable {
        let wallToMonotonic: (Date, ContinuousClock.Instant) = (Date(), ContinuousClock.now)
        func instant(for date: Date) -> ContinuousClock.Instant {
            wallToMonotonic.1 + .milliseconds(Int64(date.timeIntervalSince(wallToMonotonic.0) * 1000))
        }
    }

    static func phone(_ index: Int) -> String {
        // +1 555 2xx xxxx … +1 555 9xx xxxx: valid NANP, distinct per index.
        let exchange = 2_000_000 + index % 8_000_000
        return "+1555\(exchange)"
    }

    static func start() async throws -> BenchStack {
        let gateway = try await FakeSMSGateway.start()
        var settings = TestConfiguration()
        settings.gatewayURL = gateway.url
        settings.apiPort = freePort()
        settings.metricsPort = freePort()
        settings.concurrency = 64
        settings.prefetch = 64
        settings.logLevel = "warning"
        settings.codeTTL = "10m"
        let path = try settings.write()
        let api = try HeraldProcess("herald-api", arguments: ["--config", path], logDirectory: settings.stateDir)
        let worker = try HeraldProcess("herald-sms-worker", arguments: ["--config", path], logDirectory: settings.stateDir)
        let client = HeraldClient(port: settings.apiPort)
        guard await eventually(timeout: .seconds(30), { (try? await client.get("/readyz"))?.status == 200 }) else {
            throw TestFailure("herald-api did not start:\n\(api.output.suffix(2000))")
        }
        try await Task.sleep(for: .seconds(1))
        return BenchStack(settings: settings, gateway: gateway, api: api, worker: worker, client: client, arrivals: ArrivalClock())
    }

    func arrivalInstants() -> [String: ContinuousClock.Instant] {
        var result: [String: ContinuousClock.Instant] = [:]
        for request in gateway.received {
            if let to = request.to { result[to] = arrivals.instant(for: request.arrivedAt) }
        }
        return result
    }

    func stop() async {
        await worker.terminate()
        await api.terminate()
        await gateway.stop()
        let topology = Topology(configuration: try! settings.parsed())
        if let admin = try? await TestBroker.connection(.publisher, logger: quietLogger()) {
            try? await admin.perform { try topology.delete(on: $0) }
            await admin.shutdown()
        }
        try? FileManager.default.removeItem(atPath: settings.stateDir)
    }
}

/// A value behind a lock that closures can share.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}
