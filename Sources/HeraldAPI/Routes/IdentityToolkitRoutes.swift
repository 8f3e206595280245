import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird
import Logging
import NIOCore

/// Identity Toolkit's operations on every path family SDKs use: `/identitytoolkit.googleapis.com/v1/…`,
/// `/v1/…` and the legacy `/www.googleapis.com/identitytoolkit/v3/relyingparty/…` the iOS SDK calls.
struct IdentityToolkitRoutes: Sendable {
    let resolver: ProjectResolver
    let trustedProxies: [IPNetwork]
    let phone: PhoneSignIn
    let verifier: AppVerifier
    let refresh: TokenRefresh
    let emailLink: EmailLinkSignIn
    let accountEmails: AccountEmails
    let password: PasswordSignIn
    let imports: UserImports
    let accounts: Accounts
    let mfa: PhoneMFA
    let apple: AppleSignIn
    let revocation: AppleTokenRevocation
    let admin: AdminAuthorization
    let logger: Logger
    /// A proxy that writes hops Herald cannot read does so on every request: warned about once.
    let unparsedHops = FirstOccurrence()

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
        "signupNewUser": "accounts:signUp",
        "verifyPassword": "accounts:signInWithPassword",
        "resetPassword": "accounts:resetPassword",
        "uploadAccount": "accounts:batchCreate",
        // Served by no release yet (501 with the v1 name).
        "verifyCustomToken": "accounts:signInWithCustomToken",
        "signInWithGameCenter": "accounts:signInWithGameCenter",
        "downloadAccount": "accounts:batchGet",
        "getPublicKeys": "getPublicKeys",
        "setProjectConfig": "setProjectConfig",
        "signOutUser": "signOutUser",
    ]

    /// Identity Toolkit operations Herald does not serve: 501 NOT_IMPLEMENTED naming the operation, so a
    /// client sees what is missing (never 404 for an operation that exists). docs/firebase.md lists them.
    static let unservedOperations: Set<String> = [
        "accounts:signInWithCustomToken", "accounts:signInWithGameCenter", "accounts:issueSamlResponse", "accounts:batchGet", "getPublicKeys",
        "setProjectConfig", "signOutUser", "accounts:query", "accounts:batchDelete",
    ]

    /// v2 operations (`/v2/accounts/…` and `/v2/accounts:…`) Herald does not serve.
    static let unservedV2Operations: Set<String> = [
        "passkeyEnrollment:start", "passkeyEnrollment:finalize", "passkeySignIn:start", "passkeySignIn:finalize", "mfaEnrollment:revoke",
    ]

    static func unserved(_ operation: String) -> HeraldError {
        HeraldError(.notImplemented, "\(operation) is not implemented in Herald.")
    }

    func register(on router: Router<HeraldRequestContext>) {
        // `OperationRouter` takes most of these requests before the router, to this same handler.
        router.post("/identitytoolkit.googleapis.com/v1/:operation", use: handleOperation)
        router.post("/v1/:operation", use: handleOperation)
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
        for path in ["/identitytoolkit.googleapis.com/v2/passwordPolicy", "/v2/passwordPolicy"] {
            router.get(RouterPath(path)) { request, _ in
                let project = try resolver.project(for: request)
                return JSONWire.response(PasswordPolicyAnswer(project.passwordPolicy))
            }
        }
        for path in ["/identitytoolkit.googleapis.com/v2/accounts:revokeToken", "/v2/accounts:revokeToken"] {
            router.post(RouterPath(path)) { request, context in try await handleV2(operation: "accounts:revokeToken", request, context) }
        }
        for prefix in ["/identitytoolkit.googleapis.com/v2/accounts", "/v2/accounts"] {
            router.post(RouterPath(prefix + "/:operation")) { request, context in
                try await handleV2(operation: context.parameters.get("operation") ?? "", request, context)
            }
        }
        // Admin (firebase-admin): the project comes from the path, the caller must be an admin.
        for prefix in ["/identitytoolkit.googleapis.com/v1/projects/:project", "/v1/projects/:project"] {
            router.post(RouterPath(prefix + "/accounts")) { request, context in
                let project = try adminProject(request, context)
                return JSONWire.response(try await accounts.create(project: project, body: try await body(of: request, context)))
            }
            // firebase-admin's import_users: up to 1,000 users in one body, larger than any other request.
            router.post(RouterPath(prefix + "/accounts:batchCreate")) { request, context in
                let project = try adminProject(request, context)
                let buffer = try await request.body.collect(upTo: UserImports.maximumBodySize)
                return JSONWire.response(try await imports.batchCreate(project: project, body: buffer))
            }
            router.get(RouterPath(prefix + "/accounts:batchGet")) { request, context in
                let project = try adminProject(request, context)
                let query = request.uri.queryParameters
                return JSONWire.response(
                    try await accounts.batchGet(
                        project: project, maxResults: query.get("maxResults").flatMap { Int($0) }, pageToken: query.get("nextPageToken")))
            }
            router.post(RouterPath(prefix + "/:operation")) { request, context in
                let project = try adminProject(request, context)
                return try await handle(operation: context.parameters.get("operation") ?? "", project: project, request, context)
            }
        }
        router.post("/securetoken.googleapis.com/v1/token") { request, context in
            let project = try resolver.project(for: request)
            let body = try await body(of: request, context)
            return JSONWire.response(try await refresh.refresh(project: project, body: body))
        }
    }

    /// `POST …/v1/:operation`, from the router or from `OperationRouter`.
    @Sendable func handleOperation(_ request: Request, _ context: HeraldRequestContext) async throws -> Response {
        try await handle(operation: context.parameters.get("operation") ?? "", request, context)
    }

    func handle(operation: String, _ request: Request, _ context: HeraldRequestContext) async throws -> Response {
        try await handle(operation: operation, project: try resolver.project(for: request), request, context)
    }

    func handle(
        operation: String, project: ProjectSettings, _ request: Request, _ context: HeraldRequestContext
    ) async throws -> Response {
        let isAdmin = admin.isAdmin(authorization: request.headers.value(.authorization))
        switch operation {
        case "accounts:sendVerificationCode":
            let body = try await body(of: request, context)
            let sessionInfo = try await phone.sendVerificationCode(project: project, body: body, origin: origin(of: request, context, body: body))
            return JSONWire.response(["sessionInfo": sessionInfo] as [String: String])
        case "accounts:verifyIosClient":
            let body = try await body(of: request, context)
            let origin = origin(of: request, context, body: body)
            let answer = try await verifier.verifyIosClient(
                project: project, body: body, bundleID: origin.bundleID, clientKey: origin.clientKey, traceparent: origin.traceparent)
            return JSONWire.response(["receipt": answer.receipt, "suggestedTimeout": answer.suggestedTimeout] as [String: String])
        case "accounts:signInWithPhoneNumber":
            let body = try await body(of: request, context)
            return JSONWire.response(try await phone.signIn(project: project, body: body))
        case "accounts:sendOobCode":
            let body = try await body(of: request, context)
            return JSONWire.response(
                try await emailLink.sendOobCode(project: project, body: body, origin: emailOrigin(request, context, body, isAdmin, project)))
        case "accounts:signInWithEmailLink":
            return JSONWire.response(try await emailLink.signIn(project: project, body: try await body(of: request, context)))
        case "accounts:signUp":
            let body = try await body(of: request, context)
            if isAdmin, body.string("idToken") == nil {
                return JSONWire.response(try await accounts.create(project: project, body: body))
            }
            return JSONWire.response(
                try await password.signUp(project: project, body: body, clientKey: origin(of: request, context, body: body).clientKey))
        case "accounts:signInWithPassword":
            let body = try await body(of: request, context)
            return JSONWire.response(
                try await password.signIn(project: project, body: body, clientKey: origin(of: request, context, body: body).clientKey))
        case "accounts:resetPassword":
            return JSONWire.response(try await accountEmails.resetPassword(project: project, body: try await body(of: request, context)))
        case "accounts:batchCreate":
            guard isAdmin else { throw HeraldError(.insufficientPermission) }
            let buffer = try await request.body.collect(upTo: UserImports.maximumBodySize)
            return JSONWire.response(try await imports.batchCreate(project: project, body: buffer))
        case "accounts:createAuthUri":
            let body = try await body(of: request, context)
            return JSONWire.response(
                try await accounts.createAuthUri(project: project, body: body, clientKey: origin(of: request, context, body: body).clientKey))
        case "accounts:lookup":
            return JSONWire.response(try await accounts.lookup(project: project, body: try await body(of: request, context), isAdmin: isAdmin))
        case "accounts:update":
            let body = try await body(of: request, context)
            // applyActionCode: the code is the credential; no idToken, no admin.
            if body.string("oobCode") != nil, body.string("idToken") == nil, body.string("localId") == nil {
                return JSONWire.response(
                    try await accountEmails.apply(project: project, body: body, origin: emailOrigin(request, context, body, isAdmin, project)))
            }
            return JSONWire.response(try await accounts.update(project: project, body: body, isAdmin: isAdmin))
        case "accounts:signInWithIdp":
            return JSONWire.response(try await apple.signIn(project: project, body: try await body(of: request, context)))
        case "accounts:delete":
            return JSONWire.response(try await accounts.delete(project: project, body: try await body(of: request, context), isAdmin: isAdmin))
        case _ where Self.unservedOperations.contains(operation):
            throw Self.unserved(operation)
        default:
            throw HeraldError(.notFound)
        }
    }

    /// v2: phone second factors and token revocation.
    func handleV2(operation: String, _ request: Request, _ context: HeraldRequestContext) async throws -> Response {
        let project = try resolver.project(for: request)
        let body = try await body(of: request, context)
        switch operation {
        case "mfaEnrollment:start":
            return JSONWire.response(try await mfa.startEnrollment(project: project, body: body, origin: origin(of: request, context, body: body)))
        case "mfaEnrollment:finalize":
            return JSONWire.response(try await mfa.finalizeEnrollment(project: project, body: body))
        case "mfaEnrollment:withdraw":
            return JSONWire.response(try await mfa.withdraw(project: project, body: body))
        case "mfaSignIn:start":
            return JSONWire.response(try await mfa.startSignIn(project: project, body: body, origin: origin(of: request, context, body: body)))
        case "mfaSignIn:finalize":
            return JSONWire.response(try await mfa.finalizeSignIn(project: project, body: body))
        case "accounts:revokeToken":
            let origin = origin(of: request, context, body: body)
            return JSONWire.response(
                try await revocation.revoke(
                    project: project, body: body, bundleID: origin.bundleID, clientKey: origin.clientKey, traceparent: origin.traceparent))
        case _ where Self.unservedV2Operations.contains(operation):
            throw Self.unserved(operation)
        default:
            throw HeraldError(.notFound)
        }
    }

    func emailOrigin(
        _ request: Request, _ context: HeraldRequestContext, _ body: WireBody, _ isAdmin: Bool, _ project: ProjectSettings
    ) -> EmailLinkSignIn.Origin {
        let origin = origin(of: request, context, body: body)
        return .init(
            clientKey: origin.clientKey, locale: origin.locale, isAdmin: isAdmin, apiKey: ProjectResolver.apiKey(of: request) ?? project.apiKeys[0],
            traceparent: origin.traceparent)
    }

    /// The project named in an admin path; only admin callers get it.
    func adminProject(_ request: Request, _ context: HeraldRequestContext) throws -> ProjectSettings {
        guard admin.isAdmin(authorization: request.headers.value(.authorization)) else { throw HeraldError(.insufficientPermission) }
        guard let id = context.parameters.get("project"), let project = resolver.configuration.project(id: id) else {
            throw HeraldError(.notFound)
        }
        return project
    }

    func origin(of request: Request, _ context: HeraldRequestContext, body: WireBody) -> PhoneSignIn.Origin {
        let client = ClientAddress.resolve(
            peer: context.remoteAddress.flatMap(IPAddress.init), forwardedFor: request.headers.value(.xForwardedFor),
            trustedProxies: trustedProxies)
        if case .unparsed = client, unparsedHops.isFirst() {
            logger.warning(
                "an X-Forwarded-For hop from a trusted proxy is not an address; such requests count against the hop's text",
                metadata: ["hop": .string(client?.description ?? "")])
        }
        return PhoneSignIn.Origin(
            clientKey: client?.limitKey, remoteIP: client?.address?.description,
            bundleID: request.headers.value(.xIosBundleIdentifier),
            locale: LocaleTag.validated(request.headers.value(.xFirebaseLocale)) ?? LocaleTag.validated(body.string("languageCode")),
            traceparent: request.headers.value(.traceparent).flatMap(TraceParent.init(header:))?.child() ?? .random())
    }

    /// The request body, at most `WireBody.maximumSize` (its arrival is bounded by the pipeline's
    /// `RequestBodyDeadline`).
    func body(of request: Request, _ context: HeraldRequestContext) async throws -> WireBody {
        let buffer = try await request.body.collect(upTo: WireBody.maximumSize)
        return try WireBody.parse(buffer, contentType: request.headers.value(.contentType))
    }
}

/// `GET …/v2/passwordPolicy`: the project's policy in Firebase's shape (the SDKs' `validatePassword`
/// reads it, and checks a password before sending it).
struct PasswordPolicyAnswer: Encodable {
    struct Options: Encodable {
        var minPasswordLength: Int
        var maxPasswordLength: Int?
        var containsLowercaseCharacter: Bool?
        var containsUppercaseCharacter: Bool?
        var containsNumericCharacter: Bool?
        var containsNonAlphanumericCharacter: Bool?
    }

    var customStrengthOptions: Options
    var allowedNonAlphanumericCharacters = PasswordPolicy.allowedNonAlphanumericCharacters
    var enforcementState: String
    var forceUpgradeOnSignin: Bool
    var schemaVersion = 1

    init(_ policy: PasswordPolicy) {
        customStrengthOptions = Options(
            minPasswordLength: policy.minLength, maxPasswordLength: policy.maxLength ?? PasswordPolicy.byteCap,
            containsLowercaseCharacter: policy.requiresLowercase ? true : nil, containsUppercaseCharacter: policy.requiresUppercase ? true : nil,
            containsNumericCharacter: policy.requiresNumeric ? true : nil,
            containsNonAlphanumericCharacter: policy.requiresNonAlphanumeric ? true : nil)
        enforcementState = policy.enforcement.rawValue
        forceUpgradeOnSignin = policy.forceUpgradeOnSignin
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

    init(project: ProjectSettings) {
        let enforced = project.appVerification.enforcesRecaptchaEnterprise
        recaptchaKey = enforced ? project.appVerification.captchaSiteKey.map { "projects/\(project.id)/keys/\($0)" } : nil
        recaptchaEnforcementState = [
            State(provider: "PHONE_PROVIDER", enforcementState: enforced ? "ENFORCE" : "OFF"),
            State(provider: "EMAIL_PASSWORD_PROVIDER", enforcementState: "OFF"),
        ]
    }
}

/// Request headers every send reads, named once: `HTTPField.Name(_:)` validates and lowercases its text
/// each time it is built.
extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("x-forwarded-for")!
    static let xIosBundleIdentifier = HTTPField.Name("x-ios-bundle-identifier")!
    static let xFirebaseLocale = HTTPField.Name("x-firebase-locale")!
    static let traceparent = HTTPField.Name("traceparent")!
    static let xGoogAPIKey = HTTPField.Name("x-goog-api-key")!
}
