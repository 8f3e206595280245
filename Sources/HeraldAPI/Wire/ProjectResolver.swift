import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird

/// Finds the project from the request's API key (`?key=` or `x-goog-api-key`), as Identity Toolkit does.
struct ProjectResolver: Sendable {
    let configuration: HeraldConfiguration

    /// The API key a request carries, if any: the first `key` query parameter (even when empty, which
    /// then answers MISSING_API_KEY), else the header.
    static func apiKey(of request: Request) -> String? {
        request.uri.query.flatMap { queryValue(named: "key", in: $0) } ?? request.headers.value(.xGoogAPIKey)
    }

    /// The first value of `name` in a query string, `%XX` decoded (kept as sent when malformed), as
    /// Hummingbird's `queryParameters` reads it; "" for the bare name. Found by one scan of the text:
    /// `queryParameters` split and decoded every parameter into a new dictionary on each request.
    static func queryValue(named name: String, in query: String) -> String? {
        let bytes = query.utf8
        var start = bytes.startIndex
        while true {
            // One parameter at a time, without an array of them.
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            let parameter = bytes[start..<end]
            let equals = parameter.firstIndex(of: UInt8(ascii: "="))
            if parameter[..<(equals ?? parameter.endIndex)].elementsEqual(name.utf8) {
                guard let equals else { return "" }
                let value = Substring(parameter[parameter.index(after: equals)...])
                return ServerURL.percentDecoded(value) ?? String(value)
            }
            guard end < bytes.endIndex else { return nil }
            start = bytes.index(after: end)
        }
    }

    func project(for request: Request) throws(HeraldError) -> ProjectSettings {
        let key = Self.apiKey(of: request)
        guard let key, key.isEmpty == false else { throw HeraldError(.missingAPIKey) }
        guard let project = configuration.project(forAPIKey: key) else { throw HeraldError(.invalidAPIKey) }
        return project
    }
}
