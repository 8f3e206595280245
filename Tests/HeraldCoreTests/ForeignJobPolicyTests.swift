import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// The job contract for producers other than herald-api, without a broker: every decision
/// `ForeignJobPolicy` takes.
@Suite("Foreign producers: policy")
struct ForeignJobPolicyTests {
    static let key = Data(repeating: 9, count: 32)

    static func policy() -> ForeignJobPolicy {
        ForeignJobPolicy(
            integrations: IntegrationSettings(producers: [.init(id: "crm", key: key, projects: ["p1"], types: [.sms])]),
            projects: [TestConfiguration.project(id: "p1", denying: ["CU"]), TestConfiguration.project(id: "p2")], prefixDigits: 6)
    }

    static func job(
        project: String = "p1", to: String = "+447911123456", template: SMSMessage.Template = .text, params: [String: String] = ["text": "Hi"]
    )
        -> Job
    {
        Job(
            project: project, createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
            payload: .sms(SMSMessage(to: to, template: template, params: params)))
    }

    @Test("authentication: herald-api's jobs under its key, a producer's under its own; unknown, unsigned and wrongly signed refused")
    func authentication() throws {
        let policy = Self.policy()
        let own = SymmetricKey(data: Data(repeating: 1, count: 32))
        let body = Data(#"{"id":"x"}"#.utf8)
        let producerSignature = JobSignature.sign(body, key: SymmetricKey(data: Self.key))
        let ownSignature = JobSignature.sign(body, key: own)
        #expect(try policy.authenticate(body: body, producer: nil, signature: ownSignature, own: KeyedHMAC(key: own)).get() == .heraldAPI)
        #expect(try policy.authenticate(body: body, producer: "herald-api", signature: ownSignature, own: KeyedHMAC(key: own)).get() == .heraldAPI)
        #expect(
            try policy.authenticate(body: body, producer: "crm", signature: producerSignature, own: KeyedHMAC(key: own)).get() == .producer("crm"))
        func reason(_ producer: String?, _ signature: String?) -> String? {
            if case .failure(let refusal) = policy.authenticate(body: body, producer: producer, signature: signature, own: KeyedHMAC(key: own)) {
                return refusal.reason
            }
            return nil
        }
        #expect(reason("crm", ownSignature) == "unauthenticated: an invalid x-herald-signature for producer 'crm'", "another key")
        #expect(reason("crm", nil) == "unauthenticated: no x-herald-signature for producer 'crm'")
        #expect(reason(nil, producerSignature)?.hasPrefix("unauthenticated: an invalid x-herald-signature") == true, "no header: herald-api's key")
        #expect(reason("billing", producerSignature) == "unauthenticated: unknown producer 'billing' (integrations.producers)")
    }

    @Test("admission: project and type allowed, project known, plain text only, region allowed; answers the prefix to check")
    func admission() throws {
        let policy = Self.policy()
        #expect(try policy.admit(Self.job(), from: "crm").get() == "+447911")
        func reason(_ job: Job) -> String? {
            if case .failure(let refusal) = policy.admit(job, from: "crm") { return refusal.reason }
            return nil
        }
        #expect(reason(Self.job(project: "p2")) == "forbidden: producer 'crm' may not publish for project 'p2'")
        #expect(
            reason(Self.job(template: .verification, params: ["codeSealed": "x"]))
                == "forbidden: foreign jobs may not carry sealed values (params.codeSealed)")
        #expect(
            reason(Self.job(template: .verification, params: [:]))?.hasPrefix("forbidden: template 'verification' needs a code sealed by herald-api")
                == true)
        #expect(reason(Self.job(params: [:])) == "malformed job: params.text: missing (template 'text' sends it as it is)")
        #expect(reason(Self.job(to: "+5352345678")) == "forbidden: region CU is not allowed for project 'p1' (projects[].phone.regions)")
        let mail = Job(
            project: "p1", createdAt: Date(), expiresAt: Date().addingTimeInterval(300),
            payload: .email(EmailMessage(to: "a@example.com", template: .signInLink, params: [:])))
        #expect(reason(mail) == "forbidden: producer 'crm' may not publish email jobs")
    }
}
