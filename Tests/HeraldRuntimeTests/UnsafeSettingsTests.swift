import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing

/// Settings that start but are unsafe outside devMode, each named once.
@Suite("Unsafe settings")
struct UnsafeSettingsTests {
    static func yaml(_ extra: String = "", gateway: String = "http://127.0.0.1:1/sms", project: String = "") -> String {
        """
        projects:
          - {id: p1, apiKeys: [k1]\(project)}
        sms:
          http: {url: "\(gateway)"}
          templateDir: "\(TestConfiguration.templateDir)"
        \(extra)
        """
    }

    static func keys(_ yaml: String) throws -> [String] {
        UnsafeSettings.findings(in: try ConfigurationLoader.parse(yaml: yaml)).map(\.key)
    }

    @Test("the defaults are safe; loopback relays and gateways are not flagged")
    func defaults() throws {
        #expect(try Self.keys(Self.yaml()) == [])
        #expect(try Self.keys(Self.yaml("email: {smtp: {url: \"smtp://localhost:25\"}}")) == [])
    }

    @Test("each unsafe setting is named by its key, in the file's order")
    func each() throws {
        let yaml = Self.yaml(
            """
            http: {host: 0.0.0.0}
            admin: {cookieSecure: false}
            email: {smtp: {url: "smtp://mail.example.com:587"}}
            """, gateway: "http://gateway.example.com/sms", project: ", appVerification: {required: false}")
        #expect(
            try Self.keys(yaml) == ["admin.cookieSecure", "projects[0].appVerification.required", "sms.http.url", "email.smtp.requireTLS"])
        #expect(try Self.keys(Self.yaml("email: {smtp: {url: \"smtp://mail.example.com:587\", requireTLS: true}}")) == [])
        #expect(try Self.keys(Self.yaml("email: {smtp: {url: \"smtps://mail.example.com\"}}")) == [])
        #expect(try Self.keys(Self.yaml(gateway: "https://gateway.example.com/sms")) == [])
    }

    @Test("devMode reports nothing: it is for one laptop")
    func devMode() throws {
        #expect(try Self.keys(Self.yaml("devMode: true", project: ", appVerification: {required: false}")) == [])
    }
}
