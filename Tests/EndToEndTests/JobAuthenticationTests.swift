import Foundation
import HeraldAMQP
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("Jobs from the broker are authenticated (real broker, real executables)", .serialized)
struct JobAuthenticationTests {
    /// Everything a broker user could do to a job without Herald's keys, and one thing they could do with
    /// them, is dead-lettered as unauthenticated and never reaches the gateway; the untouched job is sent.
    @Test("forged, re-signed, re-addressed and replayed-with-another-id jobs are dead-lettered; the genuine job is sent")
    func brokerUserCannotSend() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            _ = try await stack.sendCode(to: "+15555550100")
            let published = try await TestBroker.drain(stack.topology.workQueue(.sms), using: stack.admin)
            let genuine = try #require(published.first)
            let job = try JobCodec.decode(genuine.body)
            guard case .sms(let message) = job.payload else { throw TestFailure("not an sms job") }
            let signature = genuine.headers[JobSignature.header]
            #expect(signature != nil)

            func publish(_ body: Data, messageID: String, signature: AMQPHeaderValue?) async throws {
                var headers: AMQPHeaders = ["x-herald-schema": .int(1)]
                headers[JobSignature.header] = signature
                try await stack.admin.publish(
                    AMQPOutgoingMessage(
                        exchange: stack.topology.exchange, routingKey: "sms", body: body, messageID: messageID, type: "sms", headers: headers))
            }
            // 1. A raw text to any number, for a project that does not exist, unsigned.
            let forged = Job(
                project: "no-such-project", createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
                payload: .sms(SMSMessage(to: "+15555550177", template: .text, params: ["text": "pay here"])))
            try await publish(JobCodec.encode(forged), messageID: forged.id.uuidString.lowercased(), signature: nil)
            // 2. The victim's job re-addressed to the attacker's number, keeping the original signature.
            var readdressed = job
            readdressed.payload = .sms(SMSMessage(to: "+15555550177", template: message.template, params: message.params))
            let readdressedBody = JobCodec.encode(readdressed)
            try await publish(readdressedBody, messageID: "readdressed", signature: signature)
            // 3. The same, signed with the real key (as if it leaked): the ledger says the job goes elsewhere.
            try await publish(
                readdressedBody, messageID: "readdressed-signed", signature: .string(JobSignature.sign(readdressedBody, key: stack.keys.jobSigning)))
            // 4. The sealed code moved into a new job with its own ledger row (key and store both leaked):
            //    the code is sealed to the victim's job and number, so it does not open.
            var moved = readdressed
            moved.id = UUID()
            let movedBody = JobCodec.encode(moved)
            try await stack.store.recordPending(jobID: moved.id, projectID: job.project, type: .sms, destination: "+15555550177", now: Date())
            try await publish(
                movedBody, messageID: moved.id.uuidString.lowercased(), signature: .string(JobSignature.sign(movedBody, key: stack.keys.jobSigning)))
            // 5. The genuine job, as the API published it.
            try await stack.admin.publish(
                AMQPOutgoingMessage(
                    exchange: stack.topology.exchange, routingKey: "sms", body: genuine.body, messageID: genuine.messageID, type: genuine.type,
                    contentType: genuine.contentType, headers: genuine.headers))

            try await stack.startWorker()
            try await stack.waitForGateway(1)
            #expect(await eventually { (try? await TestBroker.depth(stack.topology.deadQueue(.sms), using: stack.admin)) == 4 })
            try await Task.sleep(for: .milliseconds(500))
            #expect(stack.gateway.received.map(\.to) == ["+15555550100"])
            let dead = try await TestBroker.drain(stack.topology.deadQueue(.sms), using: stack.admin)
            var reasons: [String: String] = [:]
            for delivery in dead {
                if case .string(let reason) = delivery.headers["x-herald-reason"] { reasons[delivery.messageID ?? ""] = reason }
            }
            #expect(
                reasons[forged.id.uuidString.lowercased()]
                    == "unauthenticated: no x-herald-signature (herald-api signs its jobs; other producers set x-herald-producer)",
                "\(reasons)")
            #expect(
                reasons["readdressed"]
                    == "unauthenticated: an invalid x-herald-signature (herald-api signs its jobs; other producers set x-herald-producer)")
            #expect(reasons["readdressed-signed"] == "unauthenticated: the ledger's to differs from the job's")
            #expect(reasons[moved.id.uuidString.lowercased()]?.contains("params.codeSealed does not open") == true)
            #expect(stack.allOutput.contains("unauthenticated job dead-lettered"))
        }
    }
}
