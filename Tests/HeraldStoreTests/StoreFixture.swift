import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging

/// The three stores the conformance suites run against, each test on fresh, empty state.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres
    case memory

    var description: String { rawValue }

    /// Every kind, except under `make unit` (`HERALDTEST_SERVICES=none`), which runs no PostgreSQL: there
    /// the embedded ones only. Elsewhere PostgreSQL is required, and its absence fails the test.
    static var allCases: [StoreKind] {
        ProcessInfo.processInfo.environment["HERALDTEST_SERVICES"] == "none" ? [.sqlite, .memory] : [.sqlite, .postgres, .memory]
    }

    /// The SQL stores among `allCases`.
    static var sql: [StoreKind] { allCases.filter { $0 != .memory } }
}

/// One test's store: a SQLite file in a fresh directory, a fresh PostgreSQL schema in the suite's
/// database (`TestStore.postgresURL`), or a memory store. `open()` may be called several times: each handle stands for another process on the
/// same data (the memory store has only one).
final class StoreFixture: Sendable {
    let kind: StoreKind
    /// SQLite: the file; PostgreSQL: the store.url with the test's schema.
    let location: String
    private let memory = MemoryStore()

    init(_ kind: StoreKind) throws {
        self.kind = kind
        switch kind {
        case .sqlite:
            location = NSTemporaryDirectory() + "herald-store-\(UUID().uuidString)/herald.sqlite"
        case .postgres:
            location = try TestStore.postgres.freshURL() ?? ""
        case .memory:
            location = "memory"
        }
    }

    var configuration: StoreSettings {
        get throws {
            let url = kind == .sqlite ? "sqlite:" + location : location
            // A long lease wait: these tests pile a hundred calls on four connections to check correctness
            // under contention; with the whole suite running, the last of them can wait past the 10 s
            // production default, which is a different behaviour (LeaseDeadlinesTests covers it).
            return StoreSettings(url: url, location: try StoreLocation(parsing: url), poolSize: 4, connectTimeout: .seconds(60))
        }
    }

    /// Another handle on the fixture's data (migrating, as every process does when it starts).
    func open() async throws -> any HeraldStoreProtocol {
        if kind == .memory { return memory }
        return try await openSQL()
    }

    func openSQL(migrate: Bool = true) async throws -> SQLStore {
        try await SQLStore.open(try configuration, migrate: migrate, logger: Logger(label: "test"))
    }

    /// Closes `stores` and drops what the fixture made (the PostgreSQL schema; the SQLite directory
    /// goes when the fixture does).
    func tearDown(_ stores: any HeraldStoreProtocol...) async {
        for case let store as SQLStore in stores { await store.close() }
        if kind == .postgres { await TestStore.dropSchema(of: location) }
    }

    /// The SQLite file's directory, removed when the last reference goes (also for tests that never
    /// call `tearDown`), so a full run leaves none of them (up to 550 MB each) in /tmp.
    deinit {
        if kind == .sqlite { try? FileManager.default.removeItem(atPath: (location as NSString).deletingLastPathComponent) }
    }
}

extension StoreFixture {
    /// Runs `body` with a fresh store of `kind` and tears everything down afterwards, also when it throws.
    static func with(_ kind: StoreKind, _ body: (StoreFixture, any HeraldStoreProtocol) async throws -> Void) async throws {
        let fixture = try StoreFixture(kind)
        let store = try await fixture.open()
        do {
            try await body(fixture, store)
        } catch {
            await fixture.tearDown(store)
            throw error
        }
        await fixture.tearDown(store)
    }
}
