import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Synchronization

@testable import HeraldWorker

/// One sms worker in process: `WorkerService` on a `MemoryJobQueue` and a `MemoryStore`, sending
/// through a channel that answers what the test scripted. No broker, no database, no network.
final class WorkerHarness: Sendable {
    static let project = "p1"
    static let number = "+447911123456"
    static let topology = Topology(
        exchange: "memory", queueType: "classic", deliveryLimit: 10, retryDelays: [.sms: [.seconds(1), .seconds(5)]],
        throttleDelays: [.sms: [.seconds(1), .seconds(30)]])

    let store: MemoryStore
    let queue = MemoryJobQueue(type: .sms, topology: WorkerHarness.topology)
    let keys = HeraldKeys(master: Data(repeating: 3, count: 32))
    /// The first provider.
    var channel: ScriptedChannel { channels[0] }
    let channels: [ScriptedChannel]
    let worker: WorkerService

    /// One provider answering `outcomes`, or with `providers`, those (each with a breaker of
    /// `breaker` and at most `maxInFlight` calls open), routed by `routes` (nil: in order).
    init(
        outcomes: [DeliveryOutcome] = [], providers: [ScriptedChannel] = [], routes: SMSRoutes? = nil,
        breaker: CircuitBreaker.Settings = CircuitBreaker.Settings(), maxInFlight: Int? = nil, retryUncertain: Bool = false,
        perNumberSpacing: Duration = .zero, throttleHold: Duration = .seconds(5), concurrency: Int = 4, shutdownGrace: Duration = .seconds(5),
        providerCall: Duration = .zero, foreignJobs: ForeignJobPolicy = .none, providerRate: RatePolicy? = nil, logs: CapturedLogs? = nil,
        store: MemoryStore = MemoryStore(), retryDelays: [Duration] = WorkerHarness.topology.retryDelays[.sms]!
    ) {
        self.store = store
        let handler: SMSJobHandler
        if providers.isEmpty {
            channels = [ScriptedChannel(outcomes, takes: providerCall)]
            handler = SMSJobHandler(
                channel: channels[0], keys: keys, templates: TemplateCatalog([:]), providerRate: providerRate, perNumberSpacing: perNumberSpacing)
        } else {
            channels = providers
            handler = SMSJobHandler(
                channels: providers,
                providers: providers.map { ProviderSlot(name: $0.name, rate: providerRate, maxInFlight: maxInFlight, breaker: breaker) },
                routes: routes, keys: keys, templates: TemplateCatalog([:]), perNumberSpacing: perNumberSpacing)
        }
        worker = WorkerService(
            handler: handler, ledger: store, queue: queue,
            settings: .init(
                concurrency: concurrency, retryPolicy: RetryPolicy(delays: retryDelays), retryUncertain: retryUncertain,
                shutdownGrace: shutdownGrace, throttleDelays: Self.topology.throttleDelays[.sms]!, throttleHold: throttleHold,
                instanceID: "test-worker"),
            keys: keys, foreignJobs: foreignJobs, logger: logs?.logger("worker-test") ?? Logger(label: "worker-test"))
    }

    /// A text SMS as herald-api makes one, its ledger row recorded (`recordPending`) unless `recorded` is false.
    func job(to number: String = WorkerHarness.number, expiresIn: TimeInterval = 300, recorded: Bool = true) async throws -> Job {
        let job = Job(
            project: Self.project, createdAt: Date(), expiresAt: Date().addingTimeInterval(expiresIn),
            payload: .sms(SMSMessage(to: number, template: .text, params: ["text": "Hi"])))
        if recorded {
            try await store.recordPending(jobID: job.id, projectID: job.project, type: .sms, destination: number, now: Date())
        }
        return job
    }

    /// Pushes `job` signed as herald-api signs it and processes the delivery it becomes.
    func send(_ job: Job) async {
        queue.push(job, signer: keys.jobSigner)
        await processNext()
    }

    /// Processes the next delivery the queue hands out.
    func processNext() async {
        var deliveries = queue.deliveries.makeAsyncIterator()
        guard let delivery = await deliveries.next() else { return }
        await worker.process(delivery)
    }

    func status(_ job: Job) async throws -> DeliveryStatus? {
        try await store.deliveryStatus(jobID: job.id)?.status
    }
}

/// An SMS provider that answers the scripted outcomes in turn (then `always`, or `sent`), taking
/// `takes` per call.
final class ScriptedChannel: SMSChannel {
    let name: String
    private let script: Mutex<[DeliveryOutcome]>
    private let always = Mutex<DeliveryOutcome?>(nil)
    private let sent = Mutex<[OutgoingSMS]>([])
    private let times = Mutex<[ContinuousClock.Instant]>([])
    let takes: Duration

    init(_ outcomes: [DeliveryOutcome], takes: Duration = .zero, name: String = "scripted", always: DeliveryOutcome? = nil) {
        self.name = name
        script = Mutex(outcomes)
        self.takes = takes
        self.always.withLock { $0 = always }
    }

    /// From now on, answers `outcome` once the script is spent (nil: `sent`).
    func answer(_ outcome: DeliveryOutcome?) { always.withLock { $0 = outcome } }

    /// Every message the provider was asked to send, in order.
    var calls: [OutgoingSMS] { sent.withLock { $0 } }
    /// When each call came, in order.
    var callTimes: [ContinuousClock.Instant] { times.withLock { $0 } }

    func deliver(_ message: OutgoingSMS) async -> DeliveryReport {
        sent.withLock { $0.append(message) }
        times.withLock { $0.append(ContinuousClock.now) }
        if takes > .zero { try? await Task.sleep(for: takes) }
        let scripted = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        return DeliveryReport(scripted ?? always.withLock { $0 } ?? .sent(reference: "ref-\(name)-\(message.jobID.lowercasedText)"))
    }
}
