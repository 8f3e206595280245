import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// The verdict on a delivery before the lifecycle starts, without a worker: each refusal is a dead
/// letter at attempt 0 with its reason and outcome label.
@Suite("Job admission")
struct JobAdmissionTests {
    static let own = KeyedHMAC(key: SymmetricKey(data: Data(repeating: 1, count: 32)))
    static let producerKey = Data(repeating: 9, count: 32)
    static let policy = ForeignJobPolicy(
        integrations: IntegrationSettings(producers: [.init(id: "crm", key: producerKey, projects: ["p1"], types: [.sms])]),
        projects: [TestConfiguration.project(id: "p1")], prefixDigits: 6)
    // Whole seconds: the job codec keeps dates to the millisecond, and the test compares decoded jobs.
    static let job = Job(
        project: "p1", createdAt: Date(timeIntervalSince1970: 1_800_000_000), expiresAt: Date(timeIntervalSince1970: 1_800_000_300),
        payload: .sms(SMSMessage(to: "+447911123456", template: .text, params: ["text": "Hi"])))

    static func envelope(
        _ body: Data = JobCodec.encode(job), schema: Int64? = Int64(Job.schemaVersion), producer: String? = nil, signer: KeyedHMAC? = own
    ) -> JobAdmission.Envelope {
        JobAdmission.Envelope(
            schema: schema, producer: producer, signature: signer.map { JobSignature.sign(body, signer: $0) }, messageID: job.id.lowercasedText,
            body: body)
    }

    static func refusal(_ envelope: JobAdmission.Envelope) -> (reason: String, outcome: JobOutcome)? {
        guard case .refused(let finish) = JobAdmission.verdict(envelope, queue: .sms, policy: policy, own: own),
            case .deadLetter(let reason, 0) = finish.settlement, finish.record == nil
        else { return nil }
        return (reason, finish.outcome)
    }

    @Test("herald-api's signed job is admitted as its own; a schema-less one too")
    func admitted() {
        #expect(
            JobAdmission.verdict(Self.envelope(), queue: .sms, policy: Self.policy, own: Self.own)
                == .admitted(Self.job, origin: .heraldAPI, foreignPrefix: nil))
        #expect(
            JobAdmission.verdict(Self.envelope(schema: nil), queue: .sms, policy: Self.policy, own: Self.own)
                == .admitted(Self.job, origin: .heraldAPI, foreignPrefix: nil))
    }

    @Test("every refusal: its reason and outcome label")
    func refusals() {
        #expect(Self.refusal(Self.envelope(schema: 2))! == ("unsupported x-herald-schema 2", .malformed))
        #expect(Self.refusal(Self.envelope(signer: nil))!.outcome == .unauthenticated)
        #expect(Self.refusal(Self.envelope(signer: KeyedHMAC(key: SymmetricKey(data: Data(repeating: 2, count: 32)))))!.outcome == .unauthenticated)
        #expect(Self.refusal(Self.envelope(Data("[]".utf8)))!.outcome == .malformed)
        #expect(Self.refusal(Self.envelope(Data("[]".utf8)))!.reason.hasPrefix("malformed job: "))
        let push = Job(
            project: "p1", createdAt: Date(), expiresAt: Date().addingTimeInterval(60),
            payload: .push(PushMessage(deviceToken: String(repeating: "ab", count: 32), environment: .sandbox, topic: "t", payload: [:])))
        #expect(Self.refusal(Self.envelope(JobCodec.encode(push)))! == ("a push job in the sms queue", .malformed))
        let other = Job(project: "p2", createdAt: Date(), expiresAt: Date().addingTimeInterval(60), payload: Self.job.payload)
        let foreign = KeyedHMAC(key: SymmetricKey(data: Self.producerKey))
        #expect(
            Self.refusal(Self.envelope(JobCodec.encode(other), producer: "crm", signer: foreign))!
                == ("forbidden: producer 'crm' may not publish for project 'p2'", .refused))
    }

    @Test("a foreign job: admitted with its prefix to check, then ended by a block or a taken id, requeued when the store is down")
    func foreign() throws {
        let foreign = KeyedHMAC(key: SymmetricKey(data: Self.producerKey))
        #expect(
            JobAdmission.verdict(Self.envelope(producer: "crm", signer: foreign), queue: .sms, policy: Self.policy, own: Self.own)
                == .admitted(Self.job, origin: .producer("crm"), foreignPrefix: "+447911"))
        #expect(JobAdmission.foreign(Self.job, producer: "crm", prefix: "+447911", block: nil, recorded: true) == nil)
        let taken = try #require(JobAdmission.foreign(Self.job, producer: "crm", prefix: "+447911", block: nil, recorded: false))
        #expect(taken.settlement == .deadLetter(reason: "forbidden: job id in use", attempt: 0) && taken.outcome == .refused)
        let block = PrefixBlock(
            projectID: "p1", prefix: "+447911", until: Date(timeIntervalSince1970: 1_900_000_000), reason: "velocity", createdAt: Date())
        let blocked = try #require(JobAdmission.foreign(Self.job, producer: "crm", prefix: "+447911", block: block, recorded: false))
        guard case .deadLetter(let reason, 0) = blocked.settlement else {
            Issue.record("not dead-lettered: \(blocked.settlement)")
            return
        }
        #expect(reason.hasPrefix("blocked: prefix +447911 of project 'p1' is blocked until ") && reason.hasSuffix("(velocity)"))
        let down = JobAdmission.storeUnavailable("connection refused")
        #expect(down.settlement == .requeue(after: .seconds(1)) && down.outcome == .storeError && down.record == nil)
    }
}
