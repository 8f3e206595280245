import Foundation
import HTTPTypes
import HeraldAMQP
import HeraldAPI
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import NIOCore

/// herald-api built in-process against the real broker and a real SQLite file, with captured logs.
struct APIHarness: JobOpening {
    let settings: TestConfiguration
    let configuration: HeraldConfiguration
    let logs = CapturedLogs()
    let clock = TestClock.running()

    init(_ adjust: (inout TestConfiguration) -> Void = { _ in }) throws {
        var settings = TestConfiguration()
        // No worker runs here, so delay queues are never used; one of each keeps the topology at 14 quorum
        // queues instead of 22. Dozens of these tests start together, and the broker declares
        // quorum queues one after another (tens of milliseconds each).
        settings.retryDelays = ["1s"]
        settings.throttleDelays = ["1s"]
        settings.emailRetryDelays = ["1s"]
        adjust(&settings)
        self.settings = settings
        self.configuration = try settings.parsed()
    }

    var keys: HeraldKeys { HeraldKeys(master: configuration.codes.sealingKey!) }
    var topology: Topology { Topology(configuration: configuration) }

    /// Runs `body` with a live server and a client; cleans the test's queues afterwards.
    func run(_ body: @escaping @Sendable (HeraldClient, AMQPConnection) async throws -> Void) async throws {
        var dependencies = try await APIDependencies.live(
            configuration: configuration, sealingKey: configuration.codes.sealingKey!,
            signingKeyPEM: try KeyMaterial.idTokenSigningKey(configuration, generate: TokenIssuer.generatePrivateKeyPEM),
            logger: logs.logger("herald-api"))
        dependencies.clock = clock
        let store = dependencies.store as? SQLStore
        let app = buildApplication(dependencies, logger: logs.logger("herald-api"))
        let admin = try await TestBroker.connection(.publisher, name: "test-admin", logger: quietLogger())
        do {
            try await app.test(.live) { client in
                let heraldClient = HeraldClient(port: client.port!)
                // Publishing needs the API's broker connection, which connects and declares the topology
                // in the background. When the whole suite starts, the broker declares a thousand quorum
                // queues at once and readiness took 11 s here: wait long, and say so if it never comes
                // rather than letting the test fail later on a 503.
                let started = ContinuousClock.now
                guard await eventually(timeout: .seconds(60), { (try? await heraldClient.get("/readyz"))?.status == 200 }) else {
                    throw TestFailure(
                        "herald-api was not ready after \(ContinuousClock.now - started) (broker connection and topology); its log ends: "
                            + logs.text.suffix(800))
                }
                try await body(heraldClient, admin)
            }
        } catch {
            await cleanUp(admin: admin, store: store)
            throw error
        }
        await cleanUp(admin: admin, store: store)
    }

    /// Deletes the test's queues and state, and closes its store (whose checkpoint thread would otherwise
    /// wake ten times a second for the rest of the suite).
    private func cleanUp(admin: AMQPConnection, store: SQLStore?) async {
        try? await admin.perform { try topology.delete(on: $0) }
        await admin.shutdown()
        await store?.close()
        try? FileManager.default.removeItem(atPath: settings.stateDir)
    }

    /// Runs `body` with a second handle on the API's SQLite file, opened off the cooperative pool (as the
    /// API's own is) and closed afterwards, so its checkpoint thread does not outlive the test.
    func withStore<T: Sendable>(_ body: (SQLStore) async throws -> T) async throws -> T {
        let store = try await SQLStore.open(configuration.store, logger: quietLogger())
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    /// The jobs the API published (taken off the work queue: no worker runs in these tests).
    func publishedJobs(_ admin: AMQPConnection) async throws -> [(AMQPDelivery, Job)] {
        try await TestBroker.drain(topology.workQueue(.sms), using: admin).map { ($0, try JobCodec.decode($0.body)) }
    }

    /// The push jobs the API published.
    func publishedPushJobs(_ admin: AMQPConnection) async throws -> [(AMQPDelivery, Job)] {
        try await TestBroker.drain(topology.workQueue(.push), using: admin).map { ($0, try JobCodec.decode($0.body)) }
    }

    /// The email jobs the API published.
    func publishedEmailJobs(_ admin: AMQPConnection) async throws -> [(AMQPDelivery, Job)] {
        try await TestBroker.drain(topology.workQueue(.email), using: admin).map { ($0, try JobCodec.decode($0.body)) }
    }

}

/// Opens what a test's API sealed into its jobs, with the test's sealing key.
protocol JobOpening {
    var keys: HeraldKeys { get }
}

extension JobOpening {
    /// The sign-in link inside a published email job.
    func link(in job: Job) throws -> String {
        guard case .email(let message) = job.payload, let sealed = message.params["linkSealed"] else {
            throw TestFailure("not an email job")
        }
        return try Sealer(key: keys.sealing).open(sealed, jobID: job.id, destination: message.to)
    }

    /// The secret inside a published push job.
    func secret(in job: Job) throws -> String {
        guard case .push(let message) = job.payload, let sealed = message.payload["secretSealed"] else {
            throw TestFailure("not a push job")
        }
        return try Sealer(key: keys.sealing).open(sealed, jobID: job.id, destination: message.deviceToken)
    }

    /// The code inside a published job, opened with the test's sealing key.
    func code(in job: Job) throws -> String {
        guard case .sms(let message) = job.payload, let sealed = message.params["codeSealed"] else {
            throw TestFailure("not a verification job")
        }
        return try Sealer(key: keys.sealing).open(sealed, jobID: job.id, destination: message.to)
    }
}

enum Paths {
    static let v1 = "/identitytoolkit.googleapis.com/v1/accounts:"
    static let shortV1 = "/v1/accounts:"
    static let legacy = "/www.googleapis.com/identitytoolkit/v3/relyingparty/"
    static let token = "/securetoken.googleapis.com/v1/token"
}

/// Other spellings of a JWT's bytes that lenient base64url decoders accept.
enum NonCanonicalJWT {
    /// `token` with the lowest unused bit of its last character set (the same bytes to a lenient decoder).
    static func lowBitFlipped(_ token: String) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        guard let last = token.last, let value = alphabet.firstIndex(of: last) else { return token }
        return String(token.dropLast()) + String(alphabet[value ^ 1])
    }
}
