import HTTPTypes
import HeraldCore
import Hummingbird

/// Finds the project from the request's API key (`?key=` or `x-goog-api-key`), as Identity Toolkit does.
struct ProjectResolver: Sendable {
    let configuration: HeraldConfiguration

    /// The API key a request carries, if any.
    static func apiKey(of request: Request) -> String? {
        request.uri.queryParameters.get("key").map { String($0) } ?? request.headers[.xGoogAPIKey]
    }

    func project(for request: Request) throws(HeraldError) -> HeraldConfiguration.Project {
        let key = Self.apiKey(of: request)
        guard let key, key.isEmpty == false else { throw HeraldError(.missingAPIKey) }
        guard let project = configuration.project(forAPIKey: key) else { throw HeraldError(.invalidAPIKey) }
        return project
    }
}
