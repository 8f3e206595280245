import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird

/// Which web pages may call Herald from a browser (CORS), decided per request.
///
/// - Identity Toolkit operations: pages on a project's `authorizedDomains` (and, in devMode, on
///   loopback), the web apps Firebase's authorized domains stand for.
/// - Dev endpoints (`/emulator/…`): loopback pages only; they hand out live codes.
/// - Admin endpoints (`…/projects/{p}/…`): no page at all; admins are servers.
/// `Authorization` is never allowed cross-origin, so no page can send an admin bearer token.
/// A refused origin gets no `Access-Control-Allow-Origin`, so the browser withholds the answer.
struct CrossOriginPolicy: RouterMiddleware {
    typealias Context = HeraldRequestContext

    /// Hosts (and their subdomains) whose pages may call the Identity Toolkit operations.
    let authorizedDomains: [String]
    let devMode: Bool

    static let allowedHeaders = [
        "content-type", "x-goog-api-key", "x-client-version", "x-firebase-locale", "x-firebase-gmpid", "x-ios-bundle-identifier",
        "x-firebase-client", "x-firebase-appcheck", "traceparent",
    ].joined(separator: ", ")

    init(configuration: HeraldConfiguration) {
        authorizedDomains = Array(Set(configuration.projects.flatMap(\.authorizedDomains)))
        devMode = configuration.devMode
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers.value(.origin) else { return try await next(request, context) }
        let allowed = allows(origin: origin, path: request.uri.path)
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers = HTTPFields()
            headers[.vary] = "Origin"
            if allowed {
                headers[.accessControlAllowOrigin] = origin
                headers[.accessControlAllowMethods] = "GET, POST, DELETE, OPTIONS"
                headers[.accessControlAllowHeaders] = Self.allowedHeaders
                headers[.accessControlMaxAge] = "3600"
            }
            return Response(status: allowed ? .noContent : .forbidden, headers: headers)
        }
        var response = try await next(request, context)
        response.headers[.vary] = "Origin"
        if allowed { response.headers[.accessControlAllowOrigin] = origin }
        return response
    }

    /// The decision for a page at `origin` calling `path`.
    func allows(origin: String, path: String) -> Bool {
        guard let host = Self.host(ofOrigin: origin) else { return false }
        if path.hasPrefix("/emulator/v1/") { return IPAddress.isLoopback(host: host) }
        if path.contains("/projects/") { return false }
        if devMode, IPAddress.isLoopback(host: host) { return true }
        return ContinueURL.isAuthorized(host: host, domains: authorizedDomains)
    }

    /// The host of an `Origin` header (`https://app.example.com:8443`), lowercased; nil for `null` or
    /// anything that is not a plain http(s) origin.
    static func host(ofOrigin origin: String) -> String? {
        do {
            return try ContinueURL(origin, authorizedDomains: []).host
        } catch .unauthorized(let host) {
            return host
        } catch {
            return nil
        }
    }
}
