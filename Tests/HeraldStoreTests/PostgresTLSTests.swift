import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Testing

/// store.url's sslmode and store.tls.caFile against a PostgreSQL of the test's own that serves TLS with
/// the test CA's certificate and refuses connections without TLS.
@Suite("PostgreSQL over TLS: sslmode and store.tls.caFile")
struct PostgresTLSTests {
    @Test("verify-full with the CA connects and migrates; without the CA, or without TLS, it does not; require encrypts without checking")
    func sslModes() async throws {
        let directory = NSTemporaryDirectory() + "herald-pgtls-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let tls = TestTLS.shared
        let server = try tls.serverFiles()
        let port = freePort()
        let environment =
            "PG_PORT=\(port) PG_TLS_CERT=\(shellQuoted(server.certificate)) PG_TLS_KEY=\(shellQuoted(server.key)) HERALD_STATE_DIR=\(shellQuoted(directory))"
        let script = environment + " " + shellQuoted(TestConfiguration.repositoryRoot.path + "/scripts/postgres.sh")
        _ = try await shell(script + " start")
        // Stopped and removed before the test returns (a Task left in a defer could outlive the process
        // and left the server's data directory behind).
        func cleanUp() async {
            _ = try? await shell(script + " stop")
            try? FileManager.default.removeItem(atPath: directory)
        }
        do {
            try await checkModes(directory: directory, tls: tls)
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    private func checkModes(directory: String, tls: TestTLS) async throws {
        let base = try String(contentsOfFile: directory + "/postgres/url", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "@127.0.0.1:", with: "@localhost:")

        func open(_ query: String, caFile: String?) async throws -> SQLStore {
            let url = base + query
            return try await SQLStore.open(
                StoreSettings(
                    url: url, location: try StoreLocation(parsing: url), poolSize: 2, connectTimeout: .seconds(15), caFile: caFile),
                logger: Logger(label: "test"))
        }

        let verified = try await open("?sslmode=verify-full", caFile: tls.caFile)
        #expect(try await verified.status().version == Migrations.latestVersion)
        await verified.close()
        // The system's roots do not know the test CA.
        await #expect(throws: StoreError.self) { try await open("?sslmode=verify-full", caFile: nil) }
        // The server has only hostssl rules: a plain connection is refused.
        await #expect(throws: StoreError.self) { try await open("?sslmode=disable", caFile: nil) }
        // libpq's require: encrypted, certificate not checked.
        let unchecked = try await open("?sslmode=require", caFile: nil)
        #expect(try await unchecked.status().version == Migrations.latestVersion)
        await unchecked.close()
    }
}
