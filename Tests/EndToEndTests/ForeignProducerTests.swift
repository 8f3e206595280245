import Crypto
import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The job contract for other producers, end to end: docs/integrating.md's pika script publishes an SMS job that
/// a real worker sends and the message status API shows; an unsigned copy is dead-lettered; and what
/// herald-api and that script publish validates against deploy/asyncapi.yaml.
@Suite("Foreign producers and the job contract")
struct ForeignProducerTests {
    static let key = Data((0..<32).map { UInt8(($0 * 11 + 5) % 256) })
    static let script = TestConfiguration.repositoryRoot.appendingPathComponent("deploy/examples/produce_sms.py").path

    @Test(
        "docs/integrating.md's pika producer: its SMS is sent and shown with its producer; an unsigned copy is dead-lettered; every job matches the AsyncAPI schemas"
    )
    func pikaProducer() async throws {
        try await StackHarness.run(configure: {
            $0.integrations =
                #"{producers: [{id: crm, key: "\#(Self.key.base64EncodedString())", projects: [\#(TestConfiguration.projectID)], types: [sms]}]}"#
        }) { stack in
            // The integration guide shows exactly this script.
            let readme = try String(contentsOf: TestConfiguration.repositoryRoot.appendingPathComponent("docs/integrating.md"), encoding: .utf8)
            let source = try String(contentsOfFile: Self.script, encoding: .utf8)
            #expect(
                readme.contains(source.trimmingCharacters(in: .whitespacesAndNewlines)),
                "docs/integrating.md shows deploy/examples/produce_sms.py")

            // A queue of our own sees every job published to the exchange, for the schema check.
            let capture = stack.settings.exchange + ".capture"
            try await stack.admin.perform { channel in
                _ = try channel.declareQueue(capture, arguments: ["x-queue-type": .string("classic")])
                try channel.bindQueue(capture, exchange: stack.settings.exchange, routingKey: "sms")
            }
            try await stack.startAPI()
            try await stack.startWorker()
            _ = try await stack.sendCode(to: "+15555550501")

            let text = "Your parcel arrives today between 2 and 4 pm."
            let published = try await shell(
                "HERALD_AMQP_URL=\(shellQuoted(stack.settings.amqpURL)) HERALD_EXCHANGE=\(shellQuoted(stack.settings.exchange)) "
                    + "HERALD_PRODUCER_ID=crm HERALD_PRODUCER_KEY=\(Self.key.base64EncodedString()) "
                    + "\(shellQuoted(SMTPSink.python)) \(shellQuoted(Self.script)) \(TestConfiguration.projectID) +15555550502 \(shellQuoted(text))")
            let id = published.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(UUID(uuidString: id) != nil, "\(published)")
            try await stack.waitForGateway(2)
            let foreign = try #require(stack.gateway.received.first { $0.to == "+15555550502" })
            #expect(foreign.text == text)
            #expect(foreign.reference == id)

            let admin = TestConfiguration.adminHeader
            var message: [String: any Sendable] = [:]
            #expect(
                await eventually {
                    message = (try? await stack.client.get("/admin/v1/messages/\(id)", headers: admin).json) ?? [:]
                    return message["status"] as? String == "sent"
                }, "\(message)")
            let events = message["events"] as? [[String: Any]] ?? []
            #expect(events.first?["detail"] as? String == "accepted from crm", "the producer shows in the message's history")
            #expect(message["template"] as? String == "text")

            // The same body again without a signature, and signed under another key: never sent.
            let jobs = try await TestBroker.drain(capture, using: stack.admin)
            let body = try #require(jobs.first { $0.messageID == id }?.body)
            for signature in [nil, JobSignature.sign(body, key: .init(data: Data(repeating: 1, count: 32)))] {
                var headers: AMQPHeaders = ["x-herald-producer": .string("crm"), "x-herald-schema": .int(1)]
                if let signature { headers[JobSignature.header] = .string(signature) }
                try await stack.admin.publish(
                    AMQPOutgoingMessage(
                        exchange: stack.settings.exchange, routingKey: "sms", body: body, messageID: UUID().uuidString.lowercased(), type: "sms",
                        headers: headers))
            }
            let deadQueue = stack.topology.deadQueue(.sms)
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 2 })
            let dead = try await TestBroker.drain(deadQueue, using: stack.admin)
            let reasons = dead.compactMap { if case .string(let reason) = $0.headers["x-herald-reason"] { reason } else { nil } }.sorted()
            #expect(
                reasons == [
                    "unauthenticated: an invalid x-herald-signature for producer 'crm'", "unauthenticated: no x-herald-signature for producer 'crm'",
                ])
            #expect(stack.gateway.received.count == 2)

            // A blocked prefix holds for foreign jobs too (here tripped straight in the store).
            let store = try await stack.store
            let settings = PrefixVelocity.Settings(
                enabled: true, window: .seconds(600), multiple: 1, minimumSends: 1, blockFor: .seconds(3600), smoothing: 0.1)
            var tripped = false
            for _ in 0..<10 where tripped == false {
                tripped = try await store.observePrefix(projectID: TestConfiguration.projectID, prefix: "+447911", settings: settings, now: Date())
            }
            #expect(tripped)
            _ = try await shell(
                "HERALD_AMQP_URL=\(shellQuoted(stack.settings.amqpURL)) HERALD_EXCHANGE=\(shellQuoted(stack.settings.exchange)) "
                    + "HERALD_PRODUCER_ID=crm HERALD_PRODUCER_KEY=\(Self.key.base64EncodedString()) "
                    + "\(shellQuoted(SMTPSink.python)) \(shellQuoted(Self.script)) \(TestConfiguration.projectID) +447911123456 hello")
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 })
            let blocked = try await TestBroker.drain(deadQueue, using: stack.admin).first
            let blockReason: String? = if case .string(let reason) = blocked?.headers["x-herald-reason"] { reason } else { nil }
            #expect(
                blockReason?.hasPrefix("blocked: prefix +447911 of project '\(TestConfiguration.projectID)' is blocked until") == true,
                "\(blockReason ?? "-")")
            #expect(stack.gateway.received.count == 2)
            _ = try await TestBroker.drain(capture, using: stack.admin)

            // herald-api's job and the script's both match the published contract.
            let lines = jobs.map { delivery -> String in
                var headers: [String: Any] = [:]
                for (name, value) in delivery.headers {
                    switch value {
                    case .string(let text): headers[name] = text
                    case .int(let number): headers[name] = number
                    default: break
                    }
                }
                let object: [String: Any] = ["type": "sms", "headers": headers, "body": String(decoding: delivery.body, as: UTF8.self)]
                return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            }
            #expect(jobs.count == 2)
            let file = stack.settings.stateDir + "/published.jsonl"
            try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let validator = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/validate_jobs.py").path
            let asyncapi = TestConfiguration.repositoryRoot.appendingPathComponent("deploy/asyncapi.yaml").path
            let report = try await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(validator)) \(shellQuoted(asyncapi)) \(shellQuoted(file))")
            #expect(report.contains("validated 2 messages, 0 problems"), "\(report)")
        }
    }

    @Test("a foreign producer cannot take over a pending herald-api job by its id: dead-lettered 'job id in use', and the code is sent")
    func jobIDTakeover() async throws {
        try await StackHarness.run(configure: {
            $0.integrations =
                #"{producers: [{id: crm, key: "\#(Self.key.base64EncodedString())", projects: [\#(TestConfiguration.projectID)], types: [sms]}]}"#
        }) { stack in
            try await stack.startAPI()
            // No worker yet: the real job is taken off its queue, so the forged one arrives first.
            _ = try await stack.sendCode(to: "+15555550511")
            let workQueue = stack.topology.workQueue(.sms)
            let real = try #require(try await TestBroker.drain(workQueue, using: stack.admin).first)
            let job = try JobCodec.decode(real.body)
            let forged = JobCodec.encode(
                Job(
                    id: job.id, project: job.project, createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
                    payload: .sms(SMSMessage(to: "+15555550511", template: .text, params: ["text": "crm pre-empts the real job"]))))
            try await stack.admin.publish(
                AMQPOutgoingMessage(
                    exchange: stack.settings.exchange, routingKey: "sms", body: forged, messageID: job.id.lowercasedText, type: "sms",
                    headers: [
                        "x-herald-producer": .string("crm"), "x-herald-schema": .int(1),
                        JobSignature.header: .string(JobSignature.sign(forged, key: .init(data: Self.key))),
                    ]))
            try await stack.admin.publish(
                AMQPOutgoingMessage(
                    exchange: stack.settings.exchange, routingKey: "sms", body: real.body, messageID: real.messageID, type: "sms",
                    headers: real.headers))
            try await stack.startWorker()
            let deadQueue = stack.topology.deadQueue(.sms)
            #expect(await eventually { (try? await TestBroker.depth(deadQueue, using: stack.admin)) == 1 })
            let dead = try await TestBroker.drain(deadQueue, using: stack.admin)
            #expect(dead.first?.headers["x-herald-reason"] == .string("forbidden: job id in use"))
            try await stack.waitForGateway(1)
            try await Task.sleep(for: .seconds(1))
            #expect(stack.gateway.received.count == 1)
            #expect(stack.gateway.received.first?.text?.contains("crm pre-empts") == false, "the code, not the forged text")
            #expect(try await stack.store.message(id: job.id)?.producer != "crm")
        }
    }

    @Test("the AsyncAPI document's schemas refuse what workers refuse: a non-E.164 number, a missing field, an unsigned job")
    func schemasRefuse() async throws {
        let file = NSTemporaryDirectory() + "herald-invalid-\(UUID().uuidString.prefix(6)).jsonl"
        let good: [String: Any] = [
            "id": UUID().uuidString.lowercased(), "project": "p", "type": "sms", "createdAt": "2026-11-24T10:00:00.000Z",
            "expiresAt": "2026-11-24T10:10:00.000Z", "to": "+447700900123", "template": "text", "params": ["text": "hi"],
        ]
        var badNumber = good
        badNumber["to"] = "07700 900123"
        var missing = good
        missing["expiresAt"] = nil
        func line(_ body: [String: Any], headers: [String: Any]) -> String {
            let bodyText = String(decoding: try! JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            return String(
                decoding: try! JSONSerialization.data(withJSONObject: ["type": "sms", "headers": headers, "body": bodyText]), as: UTF8.self)
        }
        let signed: [String: Any] = ["x-herald-signature": "sha256=" + String(repeating: "ab", count: 32)]
        try [line(badNumber, headers: signed), line(missing, headers: signed), line(good, headers: [:])].joined(separator: "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let validator = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/validate_jobs.py").path
        let asyncapi = TestConfiguration.repositoryRoot.appendingPathComponent("deploy/asyncapi.yaml").path
        await #expect(throws: (any Error).self) {
            _ = try await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(validator)) \(shellQuoted(asyncapi)) \(shellQuoted(file))")
        }
        let report =
            (try? await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(validator)) \(shellQuoted(asyncapi)) \(shellQuoted(file)); true")) ?? ""
        #expect(report.contains("does not match"), "\(report)")
        #expect(report.contains("'expiresAt' is a required property"), "\(report)")
        #expect(report.contains("'x-herald-signature' is a required property"), "\(report)")
    }
}
