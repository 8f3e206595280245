import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Stops and restarts RabbitMQ under a running stack. The suite starts a broker of its own (scripts/
/// broker.sh on a free port, its own data directory), so it can take it down without disturbing the
/// tests that share the main one.
@Suite("Broker outage: stop and restart RabbitMQ under a running stack", .serialized)
struct BrokerOutageTests {
    /// A private RabbitMQ node driven through the project's broker script.
    struct PrivateBroker {
        let port = freePort()
        let distributionPort = freePort()
        let directory = NSTemporaryDirectory() + "herald-broker-\(UUID().uuidString.prefix(8))"
        static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/broker.sh").path

        var url: String { "amqp://guest:guest@127.0.0.1:\(port)/%2f" }

        /// A started node. A free port can be taken by another test's connection before RabbitMQ binds it
        /// (the suite runs in parallel with everything else), so a failed start is retried on new ports.
        static func started() async throws -> PrivateBroker {
            var failure: (any Error)?
            for _ in 0..<3 {
                let broker = PrivateBroker()
                do {
                    try await broker.run("start")
                    return broker
                } catch {
                    failure = error
                    try? FileManager.default.removeItem(atPath: broker.directory)
                }
            }
            throw failure!
        }

        func run(_ command: String) async throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let log = directory + "/broker-script.log"
            let line =
                "AMQP_PORT=\(port) AMQP_DIST_PORT=\(distributionPort) HERALD_STATE_DIR='\(directory)' '\(Self.script)' \(command) >> '\(log)' 2>&1"
            // system() waits for its own child; Foundation's Process lost track of this script's exit
            // (it leaves a daemonized broker behind) on Linux.
            let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
                Thread { continuation.resume(returning: system(line)) }.start()
            }
            guard status == 0 else {
                let output = (FileManager.default.contents(atPath: log)).map { String(decoding: $0, as: UTF8.self) } ?? ""
                throw TestFailure("scripts/broker.sh \(command) failed (port \(port), status \(status)):\n\(output.suffix(2000))")
            }
        }
    }

    @Test("a confirmed job survives a broker restart; while it is down the API answers 503 and keeps running")
    func restart() async throws {
        let broker = try await PrivateBroker.started()
        do {
            try await outageScenario(broker)
        } catch {
            try? await broker.run("stop")
            try? FileManager.default.removeItem(atPath: broker.directory)
            throw error
        }
        try await broker.run("stop")
        try? FileManager.default.removeItem(atPath: broker.directory)
    }

    func outageScenario(_ broker: PrivateBroker) async throws {
        try await StackHarness.run(brokerURL: broker.url) { stack in
            try await stack.startAPI()
            // No worker yet: the confirmed job waits in the queue through the restart.
            let session = try await stack.sendCode(to: "+15555550199")
            try await broker.run("stop-app")
            let down = try await stack.client.post(
                "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": "+15555550198"])
            #expect(down.status == 503)
            #expect(down.errorMessage?.hasPrefix("UNAVAILABLE") == true)
            #expect(try await stack.client.get("/healthz").status == 200)
            #expect(try await stack.client.get("/readyz").status == 503)
            try await broker.run("start-app")
            #expect(await eventually(timeout: .seconds(30)) { (try? await stack.client.get("/readyz"))?.status == 200 })
            #expect(stack.api?.isRunning == true)
            try await stack.startWorker()
            try await stack.waitForGateway(1, timeout: .seconds(30))
            let sms = try #require(stack.gateway.received.first)
            #expect(sms.to == "+15555550199")
            let signedIn = try await stack.client.post(
                "/v1/accounts:signInWithPhoneNumber", apiKey: TestConfiguration.apiKey,
                json: ["sessionInfo": session, "code": try #require(StackHarness.code(in: sms.text))])
            #expect(signedIn.status == 200)
            // And the pipeline works again for new sends.
            _ = try await stack.sendCode(to: "+15555550197")
            try await stack.waitForGateway(2, timeout: .seconds(30))
            #expect(stack.gateway.received.map(\.to) == ["+15555550199", "+15555550197"])
        }
    }
}
