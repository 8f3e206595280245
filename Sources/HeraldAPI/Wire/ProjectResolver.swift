import HTTPTypes
import HeraldCore
import Hummingbird

/// Finds the project from the request's API key (`?key=` or `x-goog-api-key`), as Identity Toolkit does.
struct ProjectResolver: Sendable {
    let configuration: HeraldConfiguration

    func project(for request: Request) throws(HeraldError) -> HeraldConfiguration.Project {
        let key = request.uri.queryParameters.get("key") ?? request.headers[HTTPField.Name("x-goog-api-key")!]
        guard let key, key.isEmpty == false else { throw HeraldError(.missingAPIKey) }
        guard let project = configuration.project(forAPIKey: key) else { throw HeraldError(.invalidAPIKey) }
        return project
    }
}
