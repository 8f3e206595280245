import Foundation
import HeraldCore
import HeraldStore
import Logging

/// The shared store a test runs against. End-to-end tests of the main flows run once per backend.
public enum TestStore: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// The suite's PostgreSQL (`make test` starts it with scripts/postgres.sh and exports
    /// HERALDTEST_POSTGRES_URL; by hand, its URL file is read). Not finding one fails the test:
    /// skipping the backend would hide a gap.
    public static func postgresURL() throws -> String {
        if let url = ProcessInfo.processInfo.environment["HERALDTEST_POSTGRES_URL"], url.isEmpty == false { return url }
        let file = TestConfiguration.repositoryRoot.appendingPathComponent(".herald/postgres/url")
        if let url = try? String(contentsOf: file, encoding: .utf8) { return url.trimmingCharacters(in: .whitespacesAndNewlines) }
        throw TestFailure("no PostgreSQL for the tests: run scripts/postgres.sh start or set HERALDTEST_POSTGRES_URL")
    }

    /// A `store.url` on fresh, empty state: nil for SQLite (the file in the test's state directory),
    /// a new schema in the suite's database for PostgreSQL.
    public func freshURL() throws -> String? {
        switch self {
        case .sqlite: nil
        case .postgres: try Self.postgresURL() + "?schema=" + Self.uniqueSchema()
        }
    }

    public static func uniqueSchema() -> String {
        "t_" + UUID().lowercasedText.replacingOccurrences(of: "-", with: "")
    }

    /// Drops the schema a PostgreSQL `store.url` names (test clean-up); nothing for other URLs.
    public static func dropSchema(of url: String) async {
        guard url.hasPrefix("postgres"), let schema = url.components(separatedBy: "schema=").last, let base = try? postgresURL(),
            let location = try? StoreLocation(parsing: base)
        else { return }
        let configuration = StoreSettings(url: base, location: location, poolSize: 1, connectTimeout: .seconds(5))
        guard let admin = try? await SQLStore.open(configuration, migrate: false, logger: Logger(label: "test")) else { return }
        try? await admin.dropSchema(schema)
        await admin.close()
    }
}
