import HeraldCore
import Hummingbird

/// In devMode, admin and dev requests are answered only when they name a loopback host.
///
/// devMode accepts the well-known admin token `owner` and serves live codes at `/emulator/`. A page on
/// any site can make its own name resolve to 127.0.0.1 (DNS rebinding) and then call Herald as its own
/// origin, bearer token included; the Host header it sends still carries its own name, so refusing
/// every non-loopback Host on those requests closes that door. Added only in devMode.
struct DevModeHostCheck: RouterMiddleware {
    typealias Context = HeraldRequestContext

    let admin: AdminAuthorization

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if isPrivileged(request), EmulatorRoutes.namesLoopback(authority: request.head.authority) == false {
            throw HeraldError(.insufficientPermission, "In devMode, admin and dev endpoints answer only requests to a loopback host.")
        }
        return try await next(request, context)
    }

    /// Admin and dev requests: the status page and dev endpoints by path, everything else by its bearer.
    func isPrivileged(_ request: Request) -> Bool {
        let path = request.uri.path
        return path.hasPrefix("/admin") || path.hasPrefix("/emulator/") || path.contains("/projects/")
            || admin.isAdmin(authorization: request.headers[.authorization])
    }
}
