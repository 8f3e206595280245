import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import JWTKit
import Testing

@Suite("End to end: herald-api → RabbitMQ → herald-sms-worker → gateway", .serialized)
struct EndToEndTests {
    @Test("the code in the SMS signs in, on the v1 and the legacy paths; nothing secret is logged", arguments: TestStore.allCases)
    func phoneFlow(_ store: TestStore) async throws {
        try await StackHarness.run(store: store) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            let session = try await stack.sendCode(to: "+15555550100")
            try await stack.waitForGateway(1)
            let sms = try #require(stack.gateway.received.first)
            #expect(sms.to == "+15555550100")
            #expect(sms.text?.hasSuffix(" is your verification code for Herald Test.") == true)
            #expect(sms.headers["authorization"] == "Bearer gateway-token")
            #expect(sms.headers["content-type"] == "application/json")
            let reference = try #require(sms.reference)
            #expect(UUID(uuidString: reference) != nil)
            #expect(sms.headers["idempotency-key"] == reference)
            let code = try #require(StackHarness.code(in: sms.text))

            let signedIn = try await stack.client.post(
                "/identitytoolkit.googleapis.com/v1/accounts:signInWithPhoneNumber", apiKey: TestConfiguration.apiKey,
                json: ["sessionInfo": session, "code": code])
            #expect(signedIn.status == 200)
            let idToken = try #require(signedIn.string("idToken"))
            let jwks = try await stack.client.get("/.well-known/jwks.json")
            let verifier = JWTKeyCollection()
            try await verifier.add(jwksJSON: String(decoding: jwks.body, as: UTF8.self))
            #expect(try await verifier.verify(idToken, as: PhoneClaims.self).phone_number == "+15555550100")

            // Legacy paths, same results.
            let legacySession = try await stack.client.post(
                "/www.googleapis.com/identitytoolkit/v3/relyingparty/sendVerificationCode", apiKey: TestConfiguration.apiKey,
                json: ["phoneNumber": "+15555550100"]
            ).string("sessionInfo")
            try await stack.waitForGateway(2)
            let legacyCode = try #require(StackHarness.code(in: stack.gateway.received[1].text))
            let legacySignIn = try await stack.client.post(
                "/www.googleapis.com/identitytoolkit/v3/relyingparty/verifyPhoneNumber", apiKey: TestConfiguration.apiKey,
                json: ["sessionInfo": try #require(legacySession), "code": legacyCode])
            #expect(legacySignIn.string("localId") == signedIn.string("localId"))

            let store = try await stack.store
            let jobID = try #require(UUID(uuidString: reference))
            #expect(await eventually { (try? await store.deliveryStatus(jobID: jobID))??.status == .sent })
            #expect(try await store.deliveryStatus(jobID: jobID)?.attempts == 1)

            // Metrics are on their own listener, not on the public port.
            let metrics = String(decoding: try await HeraldClient(port: stack.settings.apiMetricsPort).get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("herald_api_verification_sends_total"))
            #expect(metrics.contains("herald_build_info{"))
            #expect(try await stack.client.get("/metrics").status == 404)

            let leaks = linesLeaking([code, legacyCode, session], in: stack.allOutput)
            #expect(leaks.isEmpty, "secrets in process output: \(leaks)")
        }
    }

    @Test("worker health, readiness and metrics on workers.sms.metricsPort")
    func workerEndpoints() async throws {
        try await StackHarness.run(configure: {
            $0.smsPrices = "{US: {perSegment: 0.0079, currency: USD}, default: {perSegment: 0.05, currency: EUR}}"
        }) { stack in
            let port = freePort()
            try await stack.startWorker(metricsPort: port, environment: ["HERALD_WORKERS_SMS_QUEUE_POLL_INTERVAL": "200ms"])
            let probe = HeraldClient(port: port)
            // The worker opens its health port while it starts; under a loaded suite that takes a moment.
            #expect(await eventually { (try? await probe.get("/healthz"))?.status == 200 })
            #expect(await eventually { (try? await probe.get("/readyz"))?.status == 200 })
            try await stack.startAPI()
            _ = try await stack.sendCode()
            try await stack.waitForGateway(1)
            // The worker counts the send once it has recorded the gateway's answer, just after the gateway saw it.
            let sentLine = #"herald_worker_jobs_total{type="sms",outcome="sent"} 1"#
            #expect(
                await eventually { (try? await probe.get("/metrics")).map { String(decoding: $0.body, as: UTF8.self).contains(sentLine) } == true })
            let metrics = String(decoding: try await probe.get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("herald_worker_enqueue_to_sent_seconds_bucket"))
            #expect(metrics.contains(#"herald_worker_queue_wait_seconds_count{type="sms"} 1"#))
            // What the broker says about the worker's queues, read every 200 ms here.
            let consumers = #"herald_queue_consumers{queue="\#(stack.topology.workQueue(.sms))"} 1"#
            let dead = #"herald_queue_messages_ready{queue="\#(stack.topology.deadQueue(.sms))"} 0"#
            #expect(
                await eventually {
                    (try? await probe.get("/metrics")).map { String(decoding: $0.body, as: UTF8.self) }.map {
                        $0.contains(consumers) && $0.contains(dead)
                    }
                        == true
                })
            // Ten jobs at once, then idle: in flight goes back to 0, not the last count. The
            // gateway refuses the first once (503) and the one to the UK for good (422).
            stack.gateway.script([FakeSMSGateway.Reply(status: 503)])
            for index in 0..<10 { _ = try await stack.sendCode(to: "+1555555\(1000 + index)") }
            try await stack.waitForGateway(12)
            stack.gateway.script([FakeSMSGateway.Reply(status: 422)])
            _ = try await stack.sendCode(to: "+447911123456")
            try await stack.waitForGateway(13)
            // The start-up line says what runs at once: min(concurrency 16, prefetch 32) in the test configuration.
            let startLine = stack.workers.first?.output.split(separator: "\n").first { $0.contains("worker started") } ?? ""
            #expect(startLine.contains(#""effectiveConcurrency":"16""#), "\(startLine)")
            #expect(startLine.contains(#""prefetch":"32""#), "\(startLine)")
            let idle = #"herald_worker_in_flight{type="sms"} 0"#
            let settled = await eventually {
                (try? await probe.get("/metrics")).map { String(decoding: $0.body, as: UTF8.self).contains(idle) } == true
            }
            let gauge = String(decoding: try await probe.get("/metrics").body, as: UTF8.self).split(separator: "\n").filter {
                $0.contains("in_flight")
            }
            #expect(settled, "\(gauge)")
            // Provider errors by provider and code; spend per country from sms.prices (11 one-segment SMS to the US).
            let final = String(decoding: try await probe.get("/metrics").body, as: UTF8.self)
            #expect(final.contains(#"herald_worker_provider_errors_total{provider="http",code="http_503"} 1"#))
            #expect(final.contains(#"herald_worker_provider_errors_total{provider="http",code="http_422"} 1"#))
            let cost = final.split(separator: "\n").first { $0.hasPrefix(#"herald_sms_cost_total{country="US",currency="USD"}"#) }
            let spent = try #require(cost.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }, "\(cost ?? "no cost line")")
            #expect(abs(spent - 11 * 0.0079) < 1e-9)
            #expect(final.contains(#"herald_sms_cost_total{country="GB""#) == false, "a refused SMS costs nothing")
        }
    }
}

struct PhoneClaims: JWTPayload {
    var exp: ExpirationClaim
    var phone_number: String
    func verify(using algorithm: some JWTAlgorithm) throws { try exp.verifyNotExpired() }
}
