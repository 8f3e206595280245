import Hummingbird

/// Routes `POST /v1/<operation>` and `POST /identitytoolkit.googleapis.com/v1/<operation>`, the paths
/// every send and sign-in takes, by their bytes, ahead of Hummingbird's router; every other request
/// goes to the router as before.
///
/// Why: the router's trie walks the path a `Character` at a time and compares each component as a
/// `Substring`, about 18,000 instructions per send (4 % of herald-api's count, `herald-bench
/// instructions`). Taken here, a request reaches the same handler through the same middleware with the
/// same parameters as the router would give it.
///
/// Only operations with a colon (`accounts:sendVerificationCode`) are taken: no other route under these
/// prefixes has one (`/v1/projects` and `/v1/recaptchaParams` do not), so the router would answer every
/// request taken here with the `:operation` route. Anything unusual (percent-encoding, another slash, an
/// empty operation) goes to the router, which decides as it always has.
struct OperationRouter: HTTPResponder {
    typealias Context = HeraldRequestContext

    /// The router's middleware around the `:operation` route's handler.
    let operations: any HTTPResponder<Context>
    let router: RouterResponder<Context>
    /// What the router records as the route's path (for middleware that reads `endpointPath`).
    let endpointPath: String
    /// False: every request goes to the router.
    let enabled: Bool

    /// `handler` is the `:operation` route's; the router's middleware is put around it here. A route
    /// gets the middleware added before it was registered, and this gets all of it: add middleware
    /// before any route (as `buildApplication` does), or the two paths would differ (the equivalence
    /// test in `OperationRouterTests` compares them).
    init(router: Router<Context>, handler: @escaping @Sendable (Request, Context) async throws -> Response, enabled: Bool = true) {
        self.operations = router.middlewares.constructResponder(finalResponder: CallbackResponder(callback: handler))
        self.router = router.buildResponder()
        self.endpointPath = RouterPath("/v1/:operation").description
        self.enabled = enabled
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        guard enabled, request.method == .post, let operation = Self.operation(inPath: request.uri.path) else {
            return try await router.respond(to: request, context: context)
        }
        var context = context
        context.coreContext.parameters = Parameters([("operation", operation)])
        context.coreContext.endpointPath.value = endpointPath
        do {
            return try await operations.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            // As the router does with what its routes throw past their middleware.
            return try error.response(from: request, context: context)
        }
    }

    static let prefixes: [[UInt8]] = [Array("/v1/".utf8), Array("/identitytoolkit.googleapis.com/v1/".utf8)]

    /// The operation of a path this takes: the rest after a prefix, when it is not empty, has a colon,
    /// and has no slash or percent sign. Nil sends the request to the router.
    static func operation(inPath path: String) -> Substring? {
        // Read from the path's contiguous UTF-8 in one pass (a `String.UTF8View` walked three times
        // cost about 1,300 instructions per send); a bridged path without such storage goes to the router.
        let start = path.utf8.withContiguousStorageIfAvailable { utf8 -> Int? in
            for prefix in prefixes where utf8.count > prefix.count && utf8.starts(with: prefix) {
                var colon = false
                for byte in utf8[prefix.count...] {
                    switch byte {
                    case UInt8(ascii: ":"): colon = true
                    case UInt8(ascii: "/"), UInt8(ascii: "%"): return nil
                    default: continue
                    }
                }
                return colon ? prefix.count : nil
            }
            return nil
        }
        guard let start = start ?? nil else { return nil }
        return Substring(path.utf8.dropFirst(start))
    }
}
