import HeraldCore

extension IntegrationSettings {
    /// `integrations`; a producer may name only projects in `projects`.
    init(reader integrations: ConfigReader, projects known: [ProjectSettings]) throws {
        var producers: [Producer] = []
        for reader in try integrations.sectionList("producers") ?? [] {
            let id = try reader.string("id", default: "")
            guard id.isEmpty == false, id.count <= 64,
                id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
            else {
                throw reader.fail("id", "is required: letters, digits, '-', '_' or '.', at most 64 (got '\(id)')")
            }
            guard id != Self.heraldAPI else { throw reader.fail("id", "'herald-api' is herald-api's own; pick another id") }
            guard producers.contains(where: { $0.id == id }) == false else { throw reader.fail("id", "duplicate producer id '\(id)'") }
            guard let key = try reader.base64Secret("key", minimumBytes: 32) else {
                throw reader.fail("key", "is required: base64 of at least 32 bytes (openssl rand -base64 32)")
            }
            let projects = try reader.stringList("projects", default: [])
            for project in projects where known.contains(where: { $0.id == project }) == false {
                throw reader.fail("projects", "unknown project '\(project)'")
            }
            guard projects.isEmpty == false else { throw reader.fail("projects", "list the projects this producer may publish for") }
            var types: [JobType] = []
            for name in try reader.stringList("types", default: []) {
                // Email and push jobs carry sealed values (a sign-in link, a push secret) only herald-api can make.
                guard let type = JobType(rawValue: name), type == .sms else {
                    throw reader.fail("types", "'\(name)': foreign producers publish sms jobs (template text) only")
                }
                types.append(type)
            }
            guard types.isEmpty == false else { throw reader.fail("types", "list the job types this producer may publish ([sms])") }
            try reader.finish()
            producers.append(Producer(id: id, key: key, projects: projects, types: types))
        }
        self.init(producers: producers)
        try integrations.finish()
    }
}
