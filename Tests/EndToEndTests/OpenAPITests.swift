import Foundation
import HeraldTesting
import Testing

/// deploy/openapi.yaml against a running herald-api: it is what the API serves, and schemathesis (from
/// PyPI) sends thousands of generated requests without a 5xx, a crash, or an answer the document does not
/// describe (status, content type, schema, headers).
@Suite("OpenAPI document and schemathesis")
struct OpenAPITests {
    @Test("GET /openapi.yaml serves deploy/openapi.yaml; schemathesis finds no server error and no undocumented answer in 2,000+ requests")
    func schemathesis() async throws {
        try await StackHarness.run { stack in
            try await stack.startAPI()
            let served = try await stack.client.get("/openapi.yaml")
            let file = try Data(contentsOf: TestConfiguration.repositoryRoot.appendingPathComponent("deploy/openapi.yaml"))
            #expect(served.status == 200)
            #expect(served.body == file, "the document in the repository is the one served")

            let tool = URL(fileURLWithPath: SMTPSink.python).deletingLastPathComponent().appendingPathComponent("schemathesis").path
            let base = "http://127.0.0.1:\(stack.settings.apiPort)"
            // No operation may answer 5xx. A fixed seed keeps CI reproducible (HERALDTEST_SCHEMATHESIS_SEED picks another).
            let seed = ProcessInfo.processInfo.environment["HERALDTEST_SCHEMATHESIS_SEED"] ?? "20261124"
            // Run from the test's state directory: schemathesis keeps its example database in the working directory.
            let command = [
                "cd", shellQuoted(stack.settings.stateDir), "&&", shellQuoted(tool), "run", shellQuoted(base + "/openapi.yaml"), "--url",
                shellQuoted(base),
                "-H", shellQuoted("x-goog-api-key: \(TestConfiguration.apiKey)"),
                "-H", shellQuoted("Authorization: Bearer \(TestConfiguration.adminToken)"),
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
                "--max-examples", "80", "--seed", seed, "--no-color",
            ].joined(separator: " ")
            let output = (try? await shell(command + "; echo \"exit=$?\"")) ?? ""
            let summary = output.split(separator: "\n").suffix(40).joined(separator: "\n")
            #expect(output.contains("exit=0"), "\(summary)")
            let generated =
                output.range(of: #"(\d+) generated"#, options: .regularExpression).map { Int(output[$0].split(separator: " ")[0]) ?? 0 } ?? 0
            #expect(generated >= 2000, "\(generated) requests generated\n\(summary)")
        }
    }
}
