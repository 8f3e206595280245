import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Stops and restarts the broker under a running stack. `make test` runs this suite on its own after
/// everything else, with `HERALDTEST_BROKER_CONTROL` pointing at scripts/broker.sh.
@Suite("Broker outage: stop and restart RabbitMQ under a running stack", .serialized)
struct BrokerOutageTests {
    func control(_ command: String) throws {
        guard let script = ProcessInfo.processInfo.environment["HERALDTEST_BROKER_CONTROL"] else {
            throw TestFailure("this suite stops the broker: run it through `make test` (HERALDTEST_BROKER_CONTROL=scripts/broker.sh)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = [command]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("\(script) \(command) failed") }
    }

    @Test("a confirmed job survives a broker restart; while it is down the API answers 503 and keeps running")
    func restart() async throws {
        let stack = try await StackHarness()
        do {
            try await stack.startAPI()
            // No worker yet: the confirmed job waits in the queue through the restart.
            let session = try await stack.sendCode(to: "+15555550199")
            try control("stop-app")
            do {
                let down = try await stack.client.post(
                    "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, json: ["phoneNumber": "+15555550198"])
                #expect(down.status == 503)
                #expect(down.errorMessage?.hasPrefix("UNAVAILABLE") == true)
                #expect(try await stack.client.get("/healthz").status == 200)
                #expect(try await stack.client.get("/readyz").status == 503)
            } catch {
                try? control("start-app")
                throw error
            }
            try control("start-app")
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
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}
