import Foundation
import HeraldCurl

/// A small HTTP client for tests: posts JSON (or a form) to herald-api and parses the JSON answer.
public struct HeraldClient: Sendable {
    public let baseURL: String
    let curl: CurlClient

    public init(host: String = "127.0.0.1", port: Int) {
        self.baseURL = "http://\(host):\(port)"
        self.curl = CurlClient(logger: quietLogger())
    }

    /// An answer: status, parsed JSON object (empty if none), headers.
    public struct Answer: Sendable {
        public var status: Int
        public var body: Data
        public var headers: [(name: String, value: String)]

        /// Header names lower-cased, as `header(_:)` looks them up.
        public init(status: Int, body: Data, headers: [(name: String, value: String)]) {
            self.status = status
            self.body = body
            self.headers = headers.map { (name: $0.name.lowercased(), value: $0.value) }
        }

        public var json: [String: any Sendable] {
            ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?.mapValues { $0 as! any Sendable } ?? [:]
        }
        /// `error.message` of an Identity Toolkit error envelope.
        public var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
        public func string(_ key: String) -> String? { json[key] as? String }
        public func int(_ key: String) -> Int? { json[key] as? Int }
        public func header(_ name: String) -> String? { headers.first { $0.name == name.lowercased() }?.value }
    }

    /// POSTs `json` to `path`, with `?key=` when `apiKey` is given.
    public func post(_ path: String, apiKey: String? = nil, json: [String: any Sendable], headers: [(String, String)] = []) async throws -> Answer {
        let body = try JSONSerialization.data(withJSONObject: json)
        return try await send("POST", path, apiKey: apiKey, body: body, contentType: "application/json", headers: headers)
    }

    /// POSTs a form body.
    public func postForm(_ path: String, apiKey: String? = nil, form: String) async throws -> Answer {
        try await send("POST", path, apiKey: apiKey, body: Data(form.utf8), contentType: "application/x-www-form-urlencoded")
    }

    public func get(_ path: String, headers: [(String, String)] = []) async throws -> Answer {
        try await send("GET", path, apiKey: nil, body: nil, contentType: nil, headers: headers)
    }

    public func send(
        _ method: String, _ path: String, apiKey: String?, body: Data?, contentType: String?, headers: [(String, String)] = []
    ) async throws -> Answer {
        var url = baseURL + path
        if let apiKey { url += (path.contains("?") ? "&" : "?") + "key=\(apiKey)" }
        var allHeaders = headers.map { (name: $0.0, value: $0.1) }
        if let contentType { allHeaders.append((name: "Content-Type", value: contentType)) }
        let response = try await curl.perform(CurlHTTPRequest(method: method, url: url, headers: allHeaders, body: body, timeout: .seconds(30)))
        return Answer(status: response.status, body: response.body, headers: response.headers)
    }
}
