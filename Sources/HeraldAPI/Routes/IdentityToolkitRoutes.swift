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
    let verifier: AppVerifier
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
        "accounts:lookup", "accounts:update", "accounts:delete",
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
        for path in ["/identitytoolkit.googleapis.com/v2/recaptchaConfig", "/v2/recaptchaConfig"] {
            router.get(RouterPath(path)) { request, _ in
                let project = try resolver.project(for: request)
                return JSONWire.response(RecaptchaConfig(project: project))
            }
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
            let sessionInfo = try await phone.sendVerificationCode(project: project, body: body, origin: origin(of: request, context, body: body))
            return JSONWire.response(["sessionInfo": sessionInfo] as [String: String])
        case "accounts:verifyIosClient":
            let body = try await Self.body(of: request, context)
            let origin = origin(of: request, context, body: body)
            let answer = try await verifier.verifyIosClient(
                project: project, body: body, bundleID: origin.bundleID, clientKey: origin.clientKey, traceparent: origin.traceparent)
            return JSONWire.response(["receipt": answer.receipt, "suggestedTimeout": answer.suggestedTimeout] as [String: String])
        case "accounts:signInWithPhoneNumber":
            let body = try await Self.body(of: request, context)
            return JSONWire.response(try await phone.signIn(project: project, body: body))
        case _ where Self.plannedOperations.contains(operation):
            throw HeraldError(.notImplemented, "\(operation) is not implemented in Herald yet.")
        default:
            throw HeraldError(.notFound)
        }
    }

    func origin(of request: Request, _ context: HeraldRequestContext, body: WireBody) -> PhoneSignIn.Origin {
        let client = ClientAddress.resolve(
            peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[HTTPField.Name("x-forwarded-for")!],
            trustedProxies: trustedProxies)
        return PhoneSignIn.Origin(
            clientKey: client?.limitKey, remoteIP: client?.description,
            bundleID: request.headers[HTTPField.Name("x-ios-bundle-identifier")!],
            locale: request.headers[HTTPField.Name("x-firebase-locale")!] ?? body.string("languageCode"),
            traceparent: request.headers[HTTPField.Name("traceparent")!].flatMap(TraceParent.init(header:))?.child() ?? .random())
    }

    static func body(of request: Request, _ context: HeraldRequestContext) async throws -> WireBody {
        let buffer = try await request.body.collect(upTo: 64 * 1024)
        return try WireBody.parse(buffer, contentType: request.headers[.contentType])
    }
}

/// `GET …/v2/recaptchaConfig`: what the iOS SDK reads before phone sign-in. With a reCAPTCHA
/// Enterprise site key configured the phone provider is ENFORCE (the SDK then sends `captchaResponse`);
/// otherwise OFF, and the SDK runs the silent-push handshake with the classic reCAPTCHA fallback.
struct RecaptchaConfig: Encodable {
    struct State: Encodable {
        var provider: String
        var enforcementState: String
    }

    var recaptchaKey: String?
    var recaptchaEnforcementState: [State]

    init(project: HeraldConfiguration.Project) {
        let key = project.appVerification.captchaSiteKey
        recaptchaKey = key.map { "projects/\(project.id)/keys/\($0)" }
        recaptchaEnforcementState = [
            State(provider: "PHONE_PROVIDER", enforcementState: key == nil ? "OFF" : "ENFORCE"),
            State(provider: "EMAIL_PASSWORD_PROVIDER", enforcementState: "OFF"),
        ]
    }
}
