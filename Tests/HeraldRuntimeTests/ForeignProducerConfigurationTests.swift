import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing

/// `integrations.producers` as configuration reads it; the policy's decisions are ForeignJobPolicyTests'.
@Suite("Foreign producers: configuration")
struct ForeignProducerConfigurationTests {
    static let key = Data(repeating: 9, count: 32)
    static let yaml = """
        projects:
          - id: p1
            apiKeys: [k1]
            phone: {regions: {deny: [CU]}}
          - id: p2
            apiKeys: [k2]
        sms:
          http: {url: "http://127.0.0.1:1/sms"}
          templateDir: "\(TestConfiguration.templateDir)"
        integrations:
          producers:
            - {id: crm, key: "\(key.base64EncodedString())", projects: [p1], types: [sms]}
        """

    @Test("integrations.producers: ids, keys of 32+ bytes, known projects, sms only; herald-api's id is reserved")
    func configuration() throws {
        let configuration = try ConfigurationLoader.parse(yaml: Self.yaml)
        #expect(configuration.integrations.producers == [.init(id: "crm", key: Self.key, projects: ["p1"], types: [.sms])])
        func problem(_ producer: String) -> String? {
            let yaml = Self.yaml.replacingOccurrences(
                of: "    - {id: crm, key: \"\(Self.key.base64EncodedString())\", projects: [p1], types: [sms]}", with: "    - \(producer)")
            do {
                _ = try ConfigurationLoader.parse(yaml: yaml)
                return nil
            } catch let error as ConfigError {
                return error.key
            } catch {
                return "\(error)"
            }
        }
        let key = Self.key.base64EncodedString()
        #expect(problem("{id: herald-api, key: \"\(key)\", projects: [p1], types: [sms]}") == "integrations.producers[0].id")
        #expect(problem("{id: crm, key: c2hvcnQ=, projects: [p1], types: [sms]}") == "integrations.producers[0].key")
        #expect(problem("{id: crm, projects: [p1], types: [sms]}") == "integrations.producers[0].key")
        #expect(problem("{id: crm, key: \"\(key)\", projects: [p9], types: [sms]}") == "integrations.producers[0].projects")
        #expect(problem("{id: crm, key: \"\(key)\", projects: [p1], types: [email]}") == "integrations.producers[0].types")
        #expect(problem("{id: \"a b\", key: \"\(key)\", projects: [p1], types: [sms]}") == "integrations.producers[0].id")
    }
}
