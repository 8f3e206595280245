import Foundation

/// `integrations`: systems other than herald-api that publish jobs to Herald's exchange.
public struct IntegrationSettings: Sendable {
    /// `integrations.producers`: who may publish, with which key, for which projects and job types.
    public var producers: [Producer]

    public init(producers: [Producer] = []) { self.producers = producers }

    /// A foreign producer: sets `x-herald-producer: <id>` and signs each body with `key`
    /// (`x-herald-signature: sha256=<hex HMAC-SHA256>`).
    public struct Producer: Sendable, Equatable {
        public var id: String
        public var key: Data
        public var projects: [String]
        public var types: [JobType]

        public init(id: String, key: Data, projects: [String], types: [JobType]) {
            self.id = id
            self.key = key
            self.projects = projects
            self.types = types
        }
    }

    /// The producer id herald-api's own jobs carry; no configured producer may take it.
    public static let heraldAPI = "herald-api"
}
