import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("Faults: crashes, provider outages, refusals, expiry, shutdown", .serialized)
struct FaultTests {
    @Test("a worker killed with jobs in flight: after a restart every SMS has arrived exactly once", arguments: TestStore.allCases)
    func sigkillMidFlight(_ store: TestStore) async throws {
        try await StackHarness.run(
            store: store,
            configure: {
                $0.concurrency = 4
                $0.prefetch = 8
            }
        ) { stack in
            try await stack.startAPI()
            stack.gateway.setFallback(.init(status: 200, delay: .seconds(3)))
            // All twelve queued before the worker starts, so its four slots take jobs at once and are all
            // still waiting when it is killed: sending them while it ran took longer than the gateway's
            // 3 s on a loaded machine, and the first four were answered before the kill.
            for index in 0..<12 { _ = try await stack.sendCode(to: "+1555555\(String(format: "%04d", 100 + index))") }
            let first = try await stack.startWorker()
            // All four slots are waiting on the gateway: their requests arrived, their answers did not.
            try await stack.waitForGateway(4)
            await first.kill9()
            stack.workers.removeAll { $0 === first }
            stack.stoppedProcesses.append(first)
            stack.gateway.setFallback(.ok)
            try await stack.startWorker()
            try await stack.waitForGateway(12)
            try await Task.sleep(for: .seconds(2))
            let references = stack.gateway.received.compactMap(\.reference)
            #expect(references.count == 12, "gateway got \(references.count) requests")
            #expect(Set(references).count == 12)
            let store = try await stack.store
            var statuses: [DeliveryStatus: Int] = [:]
            for reference in Set(references) {
                let status = try #require(try await store.deliveryStatus(jobID: UUID(uuidString: reference)!))
                statuses[status.status, default: 0] += 1
            }
            // The four in flight at the crash are recorded as in doubt (sent, but unconfirmed), not resent.
            #expect(statuses[.uncertain] == 4)
            #expect(statuses[.sent] == 8)
        }
    }

    @Test("gateway 503, 503, then 200: retried through the delay queues, one SMS delivered", arguments: TestStore.allCases)
    func transientOutage(_ store: TestStore) async throws {
        try await StackHarness.run(store: store) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            stack.gateway.script([.init(status: 503), .init(status: 503, headers: ["Retry-After": "1"])])
            let session = try await stack.sendCode()
            try await stack.waitForGateway(3)
            try await Task.sleep(for: .seconds(2))
            let received = stack.gateway.received
            #expect(received.count == 3)
            #expect(Set(received.compactMap(\.reference)).count == 1)
            // Delays: 300 ms, then Retry-After 1 s (rounded up to the 1 s delay queue).
            #expect(received[1].arrivedAt.timeIntervalSince(received[0].arrivedAt) >= 0.25)
            #expect(received[2].arrivedAt.timeIntervalSince(received[1].arrivedAt) >= 0.95)
            let status = try await stack.store.deliveryStatus(jobID: UUID(uuidString: received[0].reference!)!)
            #expect(status?.status == .sent)
            #expect(status?.attempts == 3)
            let code = try #require(StackHarness.code(in: received[2].text))
            let signedIn = try await stack.client.post(
                "/v1/accounts:signInWithPhoneNumber", apiKey: TestConfiguration.apiKey, json: ["sessionInfo": session, "code": code])
            #expect(signedIn.status == 200)
            for queue in stack.topology.queues(.sms) {
                #expect(try await TestBroker.depth(queue, using: stack.admin) == 0, "\(queue) is not empty")
            }
        }
    }

    @Test(
        "gateway 400: the job lands in the dead-letter queue with the reason, nothing is sent twice, nothing secret is logged",
        arguments: TestStore.allCases)
    func permanentRefusal(_ store: TestStore) async throws {
        try await StackHarness.run(store: store) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            stack.gateway.script([.init(status: 400, body: #"{"error":"invalid destination 5555550100","code":"mode 400"}"#)])
            _ = try await stack.sendCode()
            try await stack.waitForGateway(1)
            let deadQueue = stack.topology.deadQueue(.sms)
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 })
            try await Task.sleep(for: .seconds(1.5))
            #expect(stack.gateway.received.count == 1)
            let dead = try #require(try await TestBroker.drain(deadQueue, using: stack.admin).first)
            guard case .string(let reason) = dead.headers["x-herald-reason"] else {
                Issue.record("no reason header")
                return
            }
            #expect(reason.hasPrefix("gateway answered HTTP 400"))
            #expect(reason.contains("5555550100") == false, "the destination echoed by the gateway is masked")
            #expect(reason.contains("mode 400"), "the gateway's own digits stay readable: \(reason)")
            let job = try JobCodec.decode(dead.body)
            #expect(dead.messageID == job.id.uuidString.lowercased())
            let status = try await stack.store.deliveryStatus(jobID: job.id)
            #expect(status?.status == .failed)
            guard case .sms(let message) = job.payload else {
                Issue.record("not sms")
                return
            }
            let sealed = try #require(message.params["codeSealed"])
            let code = try #require(StackHarness.code(in: stack.gateway.received[0].text))
            let leaks = linesLeaking([sealed, code], in: stack.allOutput)
            #expect(leaks.isEmpty, "secrets in process output: \(leaks)")
        }
    }

    @Test("a job past expiresAt is dropped, not sent; a malformed job is dead-lettered with the reason", arguments: TestStore.allCases)
    func expiredAndMalformed(_ store: TestStore) async throws {
        try await StackHarness.run(store: store) { stack in
            try await stack.startWorker()
            let publisher = try await TestBroker.connection(.publisher, logger: quietLogger())
            let sealer = Sealer(key: stack.keys.sealing)
            let id = UUID()
            let expired = Job(
                id: id, project: TestConfiguration.projectID, createdAt: Date().addingTimeInterval(-400),
                expiresAt: Date().addingTimeInterval(-100),
                payload: .sms(
                    SMSMessage(
                        to: "+15555550100", template: .verification,
                        params: ["codeSealed": sealer.seal("123456", jobID: id, destination: "+15555550100")])))
            let store = try await stack.store
            // As the API does: the job is in the ledger before it is published.
            try await store.recordPending(jobID: id, projectID: TestConfiguration.projectID, type: .sms, destination: "+15555550100", now: Date())
            try await AMQPJobPublisher(connection: publisher, topology: stack.topology, keys: stack.keys).publish(expired, traceparent: .random())
            // Signed (so it gets as far as decoding) but malformed.
            let malformed = Data(#"{"id":"not-a-uuid"}"#.utf8)
            try await publisher.publish(
                AMQPOutgoingMessage(
                    exchange: stack.topology.exchange, routingKey: "sms", body: malformed, messageID: "bad",
                    headers: [JobSignature.header: .string(JobSignature.sign(malformed, key: stack.keys.jobSigning))]))
            #expect(await eventually { (try? await store.deliveryStatus(jobID: id))??.status == .expired })
            #expect(await eventually { (try? await TestBroker.depth(stack.topology.deadQueue(.sms), using: stack.admin)) == 1 })
            try await Task.sleep(for: .seconds(1))
            #expect(stack.gateway.received.isEmpty)
            let dead = try #require(try await TestBroker.drain(stack.topology.deadQueue(.sms), using: stack.admin).first)
            #expect(dead.messageID == "bad")
            #expect(dead.headers["x-herald-reason"] == .string("malformed job: id: not a UUID"))
            #expect(stack.workers[0].output.contains("job expired before sending; dropped"))
            await publisher.shutdown()
        }
    }

    @Test("SIGTERM: in-flight sends finish, the rest go back to the queue, exit status 0, nothing lost or doubled", arguments: TestStore.allCases)
    func gracefulShutdown(_ store: TestStore) async throws {
        try await StackHarness.run(
            store: store,
            configure: {
                $0.concurrency = 4
                $0.prefetch = 8
            }
        ) { stack in
            try await stack.startAPI()
            stack.gateway.setFallback(.init(status: 200, delay: .seconds(1.5)))
            // Queue polling off: the idle gauge service must neither end the worker nor spoil its exit status.
            let first = try await stack.startWorker(environment: ["HERALD_WORKERS_SMS_QUEUE_POLL_INTERVAL": "0s"])
            for index in 0..<8 { _ = try await stack.sendCode(to: "+1555555\(String(format: "%04d", 200 + index))") }
            try await stack.waitForGateway(4)
            let status = await first.terminate()
            #expect(status == 0)
            stack.workers.removeAll { $0 === first }
            stack.stoppedProcesses.append(first)
            #expect(first.output.contains("worker stopped"))
            let sentBeforeRestart = stack.gateway.received.count
            stack.gateway.setFallback(.ok)
            try await stack.startWorker()
            try await stack.waitForGateway(8)
            try await Task.sleep(for: .seconds(1.5))
            let references = stack.gateway.received.compactMap(\.reference)
            #expect(sentBeforeRestart >= 4)
            #expect(references.count == 8)
            #expect(Set(references).count == 8)
            let store = try await stack.store
            for reference in references {
                #expect(try await store.deliveryStatus(jobID: UUID(uuidString: reference)!)?.status == .sent)
            }
        }
    }

    @Test("SIGTERM with a shutdown grace shorter than the gateway's answer: the requests under way finish and are recorded, none in doubt")
    func shortGraceLeavesNothingInDoubt() async throws {
        try await StackHarness.run(configure: {
            $0.shutdownGrace = "1s"
            $0.gatewayTimeout = "10s"
            $0.concurrency = 4
            $0.prefetch = 8
        }) { stack in
            try await stack.startAPI()
            stack.gateway.setFallback(.init(status: 200, delay: .seconds(3)))
            let worker = try await stack.startWorker()
            for index in 0..<6 { _ = try await stack.sendCode(to: "+1555555\(String(format: "%04d", 300 + index))") }
            try await stack.waitForGateway(4)
            let started = ContinuousClock.now
            #expect(await worker.terminate() == 0)
            let took = ContinuousClock.now - started
            stack.workers.removeAll { $0 === worker }
            stack.stoppedProcesses.append(worker)
            #expect(took >= .seconds(1), "it waited for the answers under way (\(took))")
            #expect(worker.output.contains("shutdown grace elapsed"))
            let store = try await stack.store
            let sent = stack.gateway.received.compactMap(\.reference)
            #expect(sent.count == 4, "the two jobs that had not started went back to the queue unsent")
            for reference in sent {
                #expect(try await store.deliveryStatus(jobID: UUID(uuidString: reference)!)?.status == .sent, "\(reference)")
            }
            let uncertain = try await store.messages(MessageQuery(statuses: [.uncertain])).messages
            #expect(uncertain.isEmpty)
        }
    }

    @Test("heartbeats keep flowing while a send takes longer than two heartbeat intervals")
    func heartbeatsDuringLongSends() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            stack.gateway.setFallback(.init(status: 200, delay: .seconds(4)))
            let worker = try await stack.startWorker(environment: ["HERALD_AMQP_HEARTBEAT": "1s"])
            _ = try await stack.sendCode()
            try await stack.waitForGateway(1)
            let sent = await eventually(timeout: .seconds(10)) { worker.output.contains("\"message\":\"sent\"") }
            #expect(sent)
            #expect(worker.output.contains("amqp connection lost") == false)
            #expect(stack.gateway.received.count == 1)
            let status = try await stack.store.deliveryStatus(jobID: UUID(uuidString: stack.gateway.received[0].reference!)!)
            #expect(status?.status == .sent)
            #expect(status?.attempts == 1)
        }
    }
}

@Suite("herald-admin against a running stack", .serialized)
struct AdminTests {

    @Test("topology declare and status; dead letters listed with their reason, then replayed and sent once", arguments: TestStore.allCases)
    func deadLetterReplay(_ store: TestStore) async throws {
        try await StackHarness.run(store: store) { stack in
            let declared = try await stack.admin(["topology", "declare"])
            #expect(declared.contains(stack.topology.workQueue(.sms)))
            try await stack.startAPI()
            try await stack.startWorker()
            // The provider's text carries an escape sequence that would clear an operator's screen.
            stack.gateway.script([.init(status: 422, body: "{\"error\":\"sender not registered\u{1b}[2J\u{1b}[H\"}")])
            _ = try await stack.sendCode()
            let deadQueue = stack.topology.deadQueue(.sms)
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 })
            let status = try await stack.admin(["topology", "status", "--type", "sms"])
            #expect(status.contains("\(deadQueue)\tready=1"))
            #expect(status.contains("\(stack.topology.workQueue(.sms))\tready=0\tunacked=?\tconsumers=1"), "no amqp.managementUrl here")
            // Only an sms worker runs: every type's work queue asked for by default → exit status 3, naming them.
            let unserved = try await stack.adminExit(["topology", "status"], configFirst: true)
            #expect(unserved.status == 3)
            #expect(unserved.output.contains("no consumer on: \(stack.topology.workQueue(.email)), \(stack.topology.workQueue(.push))"))
            let listed = try await stack.admin(["dead-letters", "list"])
            #expect(listed.contains("gateway answered HTTP 422"))
            #expect(listed.utf8.contains(0x1B) == false, "control characters are printed as escapes: \(listed)")
            #expect(try await TestBroker.depth(deadQueue, using: stack.admin) == 1, "listing leaves the jobs in place")
            // Piped, the rows are as they were (no header); on a terminal a header comes first; --json for scripts.
            #expect(listed.hasPrefix("id\t") == false)
            let binary = HeraldProcess.binDirectory + "/herald-admin"
            let onTerminal = try await shell(
                "script -qec \(shellQuoted("\(binary) dead-letters list --config \(stack.configPath)")) /dev/null")
            #expect(onTerminal.hasPrefix("id\tfailedAt\treason"), "\(onTerminal)")
            let plain = try await shell(
                "script -qec \(shellQuoted("\(binary) dead-letters list --no-header --config \(stack.configPath)")) /dev/null")
            #expect(plain.hasPrefix("id\t") == false && plain.contains("gateway answered HTTP 422"))
            let json = try JSONSerialization.jsonObject(with: Data(try await stack.admin(["dead-letters", "list", "--json"]).utf8)) as? [String: Any]
            let dead = try #require(json?["deadLetters"] as? [[String: Any]])
            #expect(dead.count == 1 && (dead.first?["reason"] as? String)?.hasPrefix("gateway answered HTTP 422") == true)
            #expect(json?["queue"] as? String == deadQueue)
            let queues =
                try JSONSerialization.jsonObject(with: Data(try await stack.admin(["topology", "status", "--type", "sms", "--json"]).utf8))
                as? [String: Any]
            let dlq = (queues?["queues"] as? [[String: Any]])?.first { $0["queue"] as? String == deadQueue }
            #expect(dlq?["ready"] as? Int == 1 && dlq?["unacked"] is NSNull, "\(String(describing: queues))")
            // The operator fixed the sender; replay sends the job once.
            let replayed = try await stack.admin(["dead-letters", "replay"])
            #expect(replayed.contains("replayed 1 sms job(s)"))
            try await stack.waitForGateway(2)
            try await Task.sleep(for: .seconds(1))
            #expect(stack.gateway.received.count == 2)
            #expect(Set(stack.gateway.received.compactMap(\.reference)).count == 1)
            #expect(try await TestBroker.depth(deadQueue, using: stack.admin) == 0)
            let id = try #require(UUID(uuidString: stack.gateway.received[0].reference!))
            #expect(try await stack.store.deliveryStatus(jobID: id)?.status == .sent)
        }
    }

    @Test("topology status reads unacknowledged counts from the management API when amqp.managementUrl is set")
    func unackedFromManagement() async throws {
        try await StackHarness.run(configure: {
            $0.amqpExtra = #"managementUrl: "http://127.0.0.1:15672""#
            $0.gatewayTimeout = "60s"
        }) { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            // Three sends the gateway holds unanswered: delivered to the worker, not yet acknowledged.
            stack.gateway.hold()
            for index in 0..<3 { _ = try await stack.sendCode(to: "+1555555020\(index)") }
            let line = "\(stack.topology.workQueue(.sms))\tready=0\tunacked=3\tconsumers=1"
            // The broker refreshes its statistics every 5 s.
            var output = ""
            let seen = await eventually(timeout: .seconds(45)) {
                output = (try? await stack.admin(["topology", "status", "--type", "sms"])) ?? ""
                return output.contains(line)
            }
            stack.gateway.release()
            #expect(seen, "\(output)")
            #expect(output.contains("unacked counts unavailable") == false)
        }
    }

    @Test(
        "dead letters: show one (masked, no code), replay one by id, purge those older than an age; --config before the subcommand"
    )
    func deadLetterShowReplayPurge() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            try await stack.startWorker()
            let refusal = FakeSMSGateway.Reply(status: 422, body: #"{"error":"sender not registered"}"#)
            stack.gateway.script([refusal, refusal])
            _ = try await stack.sendCode(to: "+15555550101")
            _ = try await stack.sendCode(to: "+15555550102")
            let deadQueue = stack.topology.deadQueue(.sms)
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 2 })
            // The worker sends both at once, so the gateway may see them in either order.
            let byNumber = Dictionary(
                uniqueKeysWithValues: stack.gateway.received.compactMap { request in request.to.map { ($0, request.reference ?? "") } })
            let ids = [try #require(byNumber["+15555550101"]), try #require(byNumber["+15555550102"])]
            let shown = try await stack.adminExit(["dead-letters", "show", ids[0]], configFirst: true)
            #expect(shown.status == 0)
            #expect(shown.output.contains("gateway answered HTTP 422"))
            #expect(shown.output.contains("+15*****0101"))
            #expect(shown.output.contains("+15555550101") == false)
            #expect(shown.output.range(of: #"\b\d{6}\b"#, options: .regularExpression) == nil, "no code in the output")
            #expect(try await stack.adminExit(["dead-letters", "show", UUID().uuidString]).status == 4)
            #expect(try await stack.adminExit(["dead-letters", "replay", UUID().uuidString]).status == 4)
            #expect(try await TestBroker.depth(deadQueue, using: stack.admin) == 2, "a search for an unknown id leaves both in place")
            let replayed = try await stack.admin(["dead-letters", "replay", ids[1]])
            #expect(replayed.contains("replayed 1 sms job(s)"))
            try await stack.waitForGateway(3)
            #expect(stack.gateway.received[2].reference == ids[1])
            // The job the search passed over goes back to the queue when the replay's channel closes; a
            // quorum queue counts it ready again a moment later (once, under the suite's load, not yet here).
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 })
            #expect(try await stack.admin(["dead-letters", "purge", "--older-than", "1h"]).contains("purged 0 sms job(s)"))
            try await Task.sleep(for: .milliseconds(1200))
            #expect(try await stack.admin(["dead-letters", "purge", "--older-than", "1s"]).contains("purged 1 sms job(s)"))
            #expect(try await TestBroker.depth(deadQueue, using: stack.admin) == 0)
        }
    }

    @Test("a configuration error stops every executable with one line naming the key and status 78")
    func badConfiguration() async throws {
        try await StackHarness.run { stack in
            for executable in ["herald-api", "herald-sms-worker", "herald-admin"] {
                let arguments = executable == "herald-admin" ? ["topology", "status", "--config", stack.configPath] : ["--config", stack.configPath]
                let process = try HeraldProcess(
                    executable, arguments: arguments, logDirectory: stack.settings.stateDir, environment: ["HERALD_AMQP_PREFECH": "5"])
                #expect(await process.waitForExit(timeout: .seconds(20)) == 78)
                #expect(process.output.contains("invalid configuration: configuration key 'HERALD_AMQP_PREFECH'"), "\(process.output)")
            }
        }
    }
}
