import HeraldStore

extension StoreSettings {
    /// `store`; without `url`, a SQLite file in `stateDir`.
    init(reader store: ConfigReader, stateDir: String) throws {
        let url = try store.string("url", default: "sqlite:\(stateDir)/herald.sqlite")
        let location: StoreLocation
        do throws(StoreLocationError) {
            location = try StoreLocation(parsing: url)
        } catch {
            throw store.fail("url", error.description)
        }
        let tls = try store.section("tls")
        let caFile = try tls.optionalString("caFile")
        try tls.finish()
        if case .sqlite = location, caFile != nil {
            throw store.fail("tls", "applies to postgres:// URLs only")
        }
        if case .postgres = location, try store.optionalString("synchronous") != nil {
            throw store.fail("synchronous", "applies to sqlite: URLs only (PostgreSQL's is the server's synchronous_commit)")
        }
        let synchronous = try store.choice("synchronous", SQLiteSynchronous.allCases.map(\.rawValue), default: "full")
        self.init(
            url: url, location: location, poolSize: try store.int("poolSize", default: 16, in: 1...200),
            connectTimeout: try store.duration("connectTimeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120)),
            caFile: caFile, synchronous: SQLiteSynchronous(rawValue: synchronous) ?? .full)
        try store.finish()
    }
}
