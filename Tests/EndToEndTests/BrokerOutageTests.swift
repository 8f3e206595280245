import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Stops and restarts RabbitMQ under a running stack. The suite starts a broker of its own
/// (`PrivateBroker`), so it can take it down without disturbing the tests that share the main one.
@Suite("Broker outage: stop and restart RabbitMQ under a running stack", .serialized)
struct BrokerOutageTests {
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
