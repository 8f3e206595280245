import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

/// Identity Toolkit's operations on every path family SDKs use: `/identitytoolkit.googleapis.com/v1/…`,
/// `/v1/…` and the legacy `/www.googleapis.com/identitytoolkit/v3/relyingparty/…` the iOS SDK calls.
struct IdentityToolkitRoutes: Sendable {
    let resolver: ProjectResolver
    let trustedProxies: [IPNetwork]
    let phone: PhoneSignIn
    let refresh: TokenRefresh

    /// Legacy relyingparty names → v1 operations.
    static let legacyNames: [String: String] = [
        "sendVerificationCode": "accounts:sendVerificationCode",
        "verifyPhoneNumber": "accounts:signInWithPhoneNumber",
        "getOobConfirmationCode": "accounts:sendOobCode",
        "emailLinkSignin": "accounts:signInWithEmailLink",
        "createAuthUri": "accounts:createAuthUri",
        "verifyAssertion": "accounts:signInWithIdp",
        "getAccountInfo": "accounts:lookup",
        "setAccountInfo": "accounts:update",
        "deleteAccount": "accounts:delete",
        "verifyClient": "accounts:verifyIosClient",
    ]

    /// Operations SDKs call that later releases implement: 501, so a client sees what is missing.
    static let plannedOperations: Set<String> = [
        "accounts:sendOobCode", "accounts:signInWithEmailLink", "accounts:createAuthUri", "accounts:signInWithIdp",
        "accounts:lookup", "accounts:update", "accounts:delete", "accounts:verifyIosClient",
    ]

    func register(on router: Router<HeraldRequestContext>) {
        router.post("/identitytoolkit.googleapis.com/v1/:operation") { request, context in
            try await handle(operation: context.parameters.get("operation") ?? "", request, context)
        }
        router.post("/v1/:operation") { request, context in
            try await handle(operation: context.parameters.get("operation") ?? "", request, context)
        }
        router.post("/www.googleapis.com/identitytoolkit/v3/relyingparty/:name") { request, context in
            let name = context.parameters.get("name") ?? ""
            guard let operation = Self.legacyNames[name] else { throw HeraldError(.notFound) }
            return try await handle(operation: operation, request, context)
        }
        router.post("/securetoken.googleapis.com/v1/token") { request, context in
            let project = try resolver.project(for: request)
            let body = try await Self.body(of: request, context)
            return JSONWire.response(try await refresh.refresh(project: project, body: body))
        }
    }

    func handle(operation: String, _ request: Request, _ context: HeraldRequestContext) async throws -> Response {
        let project = try resolver.project(for: request)
        switch operation {
        case "accounts:sendVerificationCode":
            let body = try await Self.body(of: request, context)
            let traceparent = request.headers[HTTPField.Name("traceparent")!].flatMap(TraceParent.init(header:))?.child() ?? .random()
            let locale = request.headers[HTTPField.Name("x-firebase-locale")!] ?? body.string("languageCode")
            let client = ClientAddress.resolve(
                peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[HTTPField.Name("x-forwarded-for")!],
                trustedProxies: trustedProxies)
            let sessionInfo = try await phone.sendVerificationCode(
                project: project, body: body, locale: locale, traceparent: traceparent, clientKey: client?.limitKey)
            return JSONWire.response(["sessionInfo": sessionInfo] as [String: String])
        case "accounts:signInWithPhoneNumber":
            let body = try await Self.body(of: request, context)
            return JSONWire.response(try await phone.signIn(project: project, body: body))
        case _ where Self.plannedOperations.contains(operation):
            throw HeraldError(.notImplemented, "\(operation) is not implemented in Herald yet.")
        default:
            throw HeraldError(.notFound)
        }
    }

    static func body(of request: Request, _ context: HeraldRequestContext) async throws -> WireBody {
        let buffer = try await request.body.collect(upTo: 64 * 1024)
        return try WireBody.parse(buffer, contentType: request.headers[.contentType])
    }
}
