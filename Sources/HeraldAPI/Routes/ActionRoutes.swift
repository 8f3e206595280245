import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird
import NIOCore

/// `GET /__/auth/action` (and the emulator's `/emulator/action`): where an email's link points.
///
/// A sign-in link (`mode=signIn`) is never looked at or spent here, since mail scanners and link
/// previews fetch it before the user does: it redirects (303) to the link's `continueUrl` with the other
/// parameters appended, as Firebase's hosted handler does, and the app then finishes with
/// `signInWithEmailLink`. The continue URL is parsed and checked against the project's authorized
/// domains and app schemes again, and the redirect goes to the URL rebuilt from its parsed parts, never
/// the raw text, so the handler is not an open redirect.
///
/// The account emails' links (`verifyEmail`, `resetPassword`, `verifyAndChangeEmail`, `recoverEmail`)
/// get a small server-rendered page (`AccountActionPages`) unless the request asked the app to handle
/// the code (`canHandleCodeInApp`), when they redirect the same way.
struct ActionRoutes: Sendable {
    let configuration: HeraldConfiguration
    let pages: AccountActionPages

    func register(on router: Router<HeraldRequestContext>) {
        for path in ["/__/auth/action", "/emulator/action"] {
            router.get(RouterPath(path)) { request, _ in await handle(request) }
            router.post(RouterPath(path)) { request, _ in try await pages.submit(request) }
        }
    }

    func handle(_ request: Request) async -> Response {
        // Hummingbird has already percent-decoded the values.
        let query = request.uri.queryParameters.map { (name: String($0.key), value: String($0.value)) }
        func value(_ name: String) -> String? { query.first { $0.name == name }?.value }
        guard let mode = value("mode"), value("oobCode") != nil, let key = value("apiKey"), let project = configuration.project(forAPIKey: key)
        else {
            return page(.badRequest, "This link is not a valid sign-in link.")
        }
        if mode != "signIn" {
            guard AccountActionPages.modes.contains(mode) else { return page(.badRequest, "This link is not a valid link.") }
            if let redirect = await pages.show(mode: mode, query: query, project: project) { return redirect }
            return redirectToApp(query: query, project: project, target: value("continueUrl"))
        }
        // An Android browser reaching the handler has no app to open the link (an installed, verified app
        // takes the app link first); without a web fallback (`afl`) the link asks for the app: the store.
        if let package = value("apn"), value("afl") == nil, request.headers[.userAgent]?.contains("Android") == true,
            project.androidApps.contains(where: { $0.packageName == package })
        {
            var headers = HTTPFields()
            headers[.location] = "https://play.google.com/store/apps/details?id=" + SignInLink.percentEncode(package)
            headers[.cacheControl] = "no-store"
            return Response(status: .seeOther, headers: headers)
        }
        return redirectToApp(query: query, project: project, target: value("continueUrl"))
    }

    private func redirectToApp(query: [(name: String, value: String)], project: ProjectSettings, target: String?) -> Response {
        guard let target else {
            return page(.ok, "Open this link on the device where you asked to sign in, in the app.")
        }
        guard let checked = try? ContinueURL(target, authorizedDomains: project.authorizedDomains, appSchemes: project.emailLink.appSchemes) else {
            return page(.badRequest, "This link's continue URL is not allowed for this app.")
        }
        var headers = HTTPFields()
        headers[.location] = SignInLink.redirect(to: checked, parameters: query)
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .seeOther, headers: headers)
    }

    private func page(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=UTF-8"
        headers[.cacheControl] = "no-store"
        let html = "<!doctype html><html><body><p>\(text)</p></body></html>\n"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}

/// The files that let a sign-in link open the app instead of the browser, served for whatever host
/// herald-api answers as (the action domain, or a `linkDomain` proxied to it):
/// `/.well-known/apple-app-site-association` names `<teamId>.<bundleId>` of every iOS app with a team id
/// for the action handler's path (universal links), `/.well-known/assetlinks.json` every Android app
/// with its signing-certificate fingerprints (app links).
struct WellKnownRoutes: Sendable {
    let configuration: HeraldConfiguration

    func register(on router: Router<HeraldRequestContext>) {
        let association = Self.appleAppSiteAssociation(configuration)
        let assetLinks = Self.assetLinks(configuration)
        for path in ["/.well-known/apple-app-site-association", "/apple-app-site-association"] {
            router.get(RouterPath(path)) { _, _ in JSONWire.response(association) }
        }
        router.get("/.well-known/assetlinks.json") { _, _ in JSONWire.response(assetLinks) }
    }

    struct Association: Encodable {
        struct AppLinks: Encodable {
            struct Detail: Encodable {
                struct Component: Encodable {
                    var path: String
                    enum CodingKeys: String, CodingKey { case path = "/" }
                }
                var appID: String
                var paths: [String]
                var appIDs: [String]
                var components: [Component]
            }
            var apps: [String] = []
            var details: [Detail]
        }
        var applinks: AppLinks
    }

    static func appleAppSiteAssociation(_ configuration: HeraldConfiguration) -> Association {
        var details: [Association.AppLinks.Detail] = []
        for project in configuration.projects {
            let path = URL(string: project.emailLink.actionUrl)?.path ?? "/__/auth/action"
            for app in project.iosApps {
                guard let team = app.teamId else { continue }
                let id = team + "." + app.bundleId
                guard details.contains(where: { $0.appID == id }) == false else { continue }
                details.append(.init(appID: id, paths: [path + "*"], appIDs: [id], components: [.init(path: path + "*")]))
            }
        }
        return Association(applinks: .init(details: details))
    }

    struct Statement: Encodable {
        struct Target: Encodable {
            var namespace = "android_app"
            var package_name: String
            var sha256_cert_fingerprints: [String]
        }
        var relation = ["delegate_permission/common.handle_all_urls"]
        var target: Target
    }

    static func assetLinks(_ configuration: HeraldConfiguration) -> [Statement] {
        configuration.projects.flatMap(\.androidApps).filter { $0.sha256CertFingerprints.isEmpty == false }.map {
            Statement(target: .init(package_name: $0.packageName, sha256_cert_fingerprints: $0.sha256CertFingerprints))
        }
    }
}

/// Auth Emulator endpoints, only with `devMode: true`: the codes and links that went out, so local tests
/// and scripts can finish sign-ins without reading SMS or mail, and a reset of a project's accounts.
///
/// They hand out live codes without authentication, so devMode listens on loopback only (configuration
/// refuses anything else), browsers get no CORS grant except for loopback pages (`CrossOriginPolicy`),
/// and a request must name a loopback host: a page on a rebound DNS name pointing at 127.0.0.1 is refused.
struct EmulatorRoutes: Sendable {
    let store: any OobCodeStore & VerificationStore & AccountStore
    let keys: HeraldKeys
    let configuration: HeraldConfiguration
    let clock: any WallClock

    struct OobEntry: Encodable {
        var email: String
        var oobCode: String
        var oobLink: String
        var requestType: String
    }

    struct CodeEntry: Encodable {
        var code: String
        var phoneNumber: String
        var sessionInfo: String
    }

    func register(on router: Router<HeraldRequestContext>) {
        guard configuration.devMode else { return }
        let sealer = Sealer(key: keys.sealing)
        router.get("/emulator/v1/projects/:project/oobCodes") { request, context in
            let project = try project(request, context)
            var entries: [OobEntry] = []
            for record in try await store.openOobCodes(projectID: project.id, now: clock.now) {
                guard let sealed = record.linkSealed, let link = try? sealer.open(sealed, context: "oob:" + record.codeHash),
                    let code = URLComponents(string: link)?.queryItems?.first(where: { $0.name == "oobCode" })?.value
                else { continue }
                entries.append(OobEntry(email: record.email, oobCode: code, oobLink: link, requestType: record.requestType))
            }
            return JSONWire.response(["oobCodes": entries])
        }
        router.get("/emulator/v1/projects/:project/verificationCodes") { request, context in
            let project = try project(request, context)
            var entries: [CodeEntry] = []
            for session in try await store.openSessions(projectID: project.id, now: clock.now) {
                guard let sealedCode = session.codeSealed, let code = try? sealer.open(sealedCode, context: "code:" + session.id),
                    let sealedInfo = session.sessionInfoSealed,
                    let info = try? sealer.open(sealedInfo, context: PhoneSignIn.sealingContext(session.id))
                else { continue }
                entries.append(CodeEntry(code: code, phoneNumber: session.phoneNumber, sessionInfo: info))
            }
            return JSONWire.response(["verificationCodes": entries])
        }
        // Drops the project's users (and their second factors and refresh tokens); open codes stay, as in
        // the Auth Emulator.
        router.delete("/emulator/v1/projects/:project/accounts") { request, context in
            let project = try project(request, context)
            _ = try await store.deleteAllUsers(projectID: project.id)
            return JSONWire.response([String: String]())
        }
    }

    private func project(_ request: Request, _ context: HeraldRequestContext) throws -> ProjectSettings {
        guard Self.namesLoopback(authority: request.head.authority) else {
            throw HeraldError(.insufficientPermission, "Dev endpoints answer only requests to a loopback host.")
        }
        guard let id = context.parameters.get("project"), let project = configuration.project(id: id) else { throw HeraldError(.notFound) }
        return project
    }

    /// True when the Host header is `localhost`, 127.x.x.x or `[::1]` (with or without a port).
    static func namesLoopback(authority: String?) -> Bool {
        guard let authority else { return false }
        var host = authority.lowercased()
        if host.hasPrefix("[") {
            host = String(host.prefix { $0 != "]" }) + "]"
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        return IPAddress.isLoopback(host: host)
    }
}
