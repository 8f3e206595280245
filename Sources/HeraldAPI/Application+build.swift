import Foundation
import HTTPTypes
import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldStore
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// What herald-api needs to answer requests; `live(configuration:logger:)` wires the real ones.
public struct APIDependencies: Sendable {
    public var configuration: HeraldConfiguration
    public var store: any HeraldStoreProtocol
    public var publisher: any JobPublisher
    public var keys: HeraldKeys
    public var tokens: TokenIssuer
    public var clock: any WallClock
    /// True when the store and the broker are reachable (`/readyz`).
    public var isReady: @Sendable () -> Bool
    /// Long-running parts the application runs and stops with it (the broker connection).
    public var services: [any Service]
    /// Queue figures, dead letters and replays for the status page (nil: it says the broker is not connected).
    public var broker: (any BrokerConsole)?

    public init(
        configuration: HeraldConfiguration, store: any HeraldStoreProtocol, publisher: any JobPublisher, keys: HeraldKeys,
        tokens: TokenIssuer, clock: any WallClock = SystemClock(), isReady: @escaping @Sendable () -> Bool,
        services: [any Service] = [], broker: (any BrokerConsole)? = nil
    ) {
        self.broker = broker
        self.configuration = configuration
        self.store = store
        self.publisher = publisher
        self.keys = keys
        self.tokens = tokens
        self.clock = clock
        self.isReady = isReady
        self.services = services
    }

    /// The configured store (SQLite or PostgreSQL) and a confirm-mode publisher connection that declares the topology on every
    /// (re)connect; keys come from `KeyMaterial` (configuration or `state.dir`).
    public static func live(
        configuration: HeraldConfiguration, sealingKey: Data, signingKeyPEM: String, logger: Logger
    ) async throws -> APIDependencies {
        let store = try await SQLStore.open(configuration.store, logger: logger)
        let topology = Topology(configuration: configuration)
        let types = Topology.types(in: configuration)
        let connection = AMQPConnection(
            options: .init(configuration.amqp, role: .publisher, name: "herald-api"),
            logger: logger,
            onConnect: { channel in
                do {
                    try topology.declare(on: channel, types: types)
                } catch {
                    logger.error("cannot declare the broker topology", metadata: ["error": .string("\(error)")])
                    throw error
                }
            })
        let tokens = try await TokenIssuer(privateKeyPEM: signingKeyPEM, idTokenTTL: configuration.tokens.idTokenTTL)
        return APIDependencies(
            configuration: configuration, store: store,
            publisher: AMQPJobPublisher(connection: connection, topology: topology, keys: HeraldKeys(master: sealingKey)),
            keys: HeraldKeys(master: sealingKey), tokens: tokens, isReady: { connection.isConnected },
            services: [
                connection,
                StoreMaintenance(
                    store: store, retention: configuration.ledger.retention, logger: logger,
                    conversionSettle: StoreMaintenance.conversionSettle(configuration)),
            ],
            broker: AMQPBrokerConsole(
                connection: connection, topology: topology,
                management: configuration.amqp.managementURL.map { BrokerManagement(baseURL: $0, endpoint: configuration.amqp.endpoints[0]) }))
    }
}

/// Builds herald-api: Identity Toolkit routes, token endpoints, JWKS and health. Metrics are served on
/// their own listener (`http.metricsHost`/`metricsPort`, added by the executable), not here.
///
/// `routeOperationsFirst: false` sends every request through Hummingbird's router, bypassing
/// `OperationRouter` (tests compare the two).
public func buildApplication(_ dependencies: APIDependencies, logger: Logger, routeOperationsFirst: Bool = true) -> some ApplicationProtocol {
    let configuration = dependencies.configuration
    let router = Router(context: HeraldRequestContext.self)
    // One idle timeout for slow heads, idle keep-alive connections and (as a whole) slow bodies: slowloris.
    let (seconds, attoseconds) = configuration.http.idleTimeout.components
    let idleTimeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    // Outermost, so error answers carry the CORS grant too (web SDKs read the error codes).
    KnownSeries.start(projects: configuration.projects)
    router.add(middleware: CrossOriginPolicy(configuration: configuration))
    router.add(middleware: IdentityToolkitErrorMiddleware())
    if configuration.devMode { router.add(middleware: DevModeHostCheck(admin: AdminAuthorization(tokens: configuration.admin.tokens))) }
    // One transfer thread for the process's outbound calls (siteverify, Apple's keys, worker probes of the status page).
    let curl = CurlClient(logger: logger)
    let verifier = AppVerifier(
        store: dependencies.store, publisher: dependencies.publisher, keys: dependencies.keys, limits: configuration.limits,
        captcha: CaptchaVerifier(client: curl, logger: logger), clock: dependencies.clock, logger: logger,
        pushes: configuration.push.provider != .none)
    let completion = SignInCompletion(store: dependencies.store, tokens: dependencies.tokens, keys: dependencies.keys, clock: dependencies.clock)
    let signedIn = SignedInUser(
        store: dependencies.store, tokens: dependencies.tokens, clock: dependencies.clock, recentLogin: configuration.tokens.recentLogin)
    // One set of leased slices for the process: SMS and email sends share the client-address and project rows.
    let leases = LeasedLimits(store: dependencies.store, settings: configuration.limits.leasing, clock: dependencies.clock, logger: logger)
    let phone = PhoneSignIn(
        store: dependencies.store, publisher: dependencies.publisher, keys: dependencies.keys, tokens: dependencies.tokens,
        limits: configuration.limits, leases: leases,
        verifier: verifier, completion: completion, signedIn: signedIn, devMode: configuration.devMode, clock: dependencies.clock,
        logger: logger)
    let refresh = TokenRefresh(store: dependencies.store, tokens: dependencies.tokens, clock: dependencies.clock)
    let emails = ActionEmailQueue(
        store: dependencies.store, publisher: dependencies.publisher, keys: dependencies.keys, limits: configuration.limits, leases: leases,
        clock: dependencies.clock, logger: logger)
    let proof = AddressProof(store: dependencies.store, completion: completion, logger: logger)
    let accountEmails = AccountEmails(
        store: dependencies.store, emails: emails, signedIn: signedIn, completion: completion, proof: proof, limits: configuration.limits,
        devMode: configuration.devMode, clock: dependencies.clock, logger: logger)
    let emailLink = EmailLinkSignIn(
        store: dependencies.store, emails: emails, accountEmails: accountEmails, completion: completion, proof: proof, signedIn: signedIn,
        devMode: configuration.devMode, clock: dependencies.clock, logger: logger)
    let password = PasswordSignIn(
        store: dependencies.store, completion: completion, signedIn: signedIn, limits: configuration.limits, clock: dependencies.clock,
        logger: logger)
    let accounts = Accounts(
        store: dependencies.store, signedIn: signedIn, completion: completion, limits: configuration.limits, clock: dependencies.clock,
        logger: logger)
    let mfa = PhoneMFA(
        store: dependencies.store, phone: phone, verifier: verifier, completion: completion, signedIn: signedIn, clock: dependencies.clock,
        logger: logger)
    let apple = AppleSignIn(
        store: dependencies.store,
        verifier: AppleIdentityVerifier(configuration: configuration, client: curl, clock: dependencies.clock, logger: logger),
        signedIn: signedIn, completion: completion, keys: dependencies.keys, clock: dependencies.clock, logger: logger)
    let identityToolkit = IdentityToolkitRoutes(
        resolver: ProjectResolver(configuration: configuration), trustedProxies: configuration.http.trustedProxies, phone: phone,
        verifier: verifier, refresh: refresh, emailLink: emailLink, accountEmails: accountEmails, password: password,
        imports: UserImports(store: dependencies.store, clock: dependencies.clock, logger: logger), accounts: accounts, mfa: mfa, apple: apple,
        revocation: AppleTokenRevocation(
            store: dependencies.store, limits: configuration.limits, publisher: dependencies.publisher, signedIn: signedIn, keys: dependencies.keys,
            clock: dependencies.clock,
            logger: logger),
        admin: AdminAuthorization(tokens: configuration.admin.tokens),
        logger: logger)
    identityToolkit.register(on: router)
    ActionRoutes(
        configuration: configuration, pages: AccountActionPages(configuration: configuration, emails: accountEmails, keys: dependencies.keys)
    ).register(on: router)
    WellKnownRoutes(configuration: configuration).register(on: router)
    RecaptchaFallback(resolver: ProjectResolver(configuration: configuration)).register(on: router)
    MessageRoutes(ledger: dependencies.store, admin: AdminAuthorization(tokens: configuration.admin.tokens), clock: dependencies.clock)
        .register(on: router)
    ReceiptRoutes(ledger: dependencies.store, sms: configuration.sms, clock: dependencies.clock).register(on: router)
    StatusPage(
        store: dependencies.store, broker: dependencies.broker,
        session: AdminSession(key: dependencies.keys.adminSessions, tokens: configuration.admin.tokens), configuration: configuration,
        probe: curl, clock: dependencies.clock
    ).register(on: router)
    EmulatorRoutes(store: dependencies.store, keys: dependencies.keys, configuration: configuration, clock: dependencies.clock).register(on: router)

    let jwks = dependencies.tokens.jwksDocument
    router.get("/.well-known/jwks.json") { _, _ -> Response in
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "public, max-age=3600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: jwks)))
    }
    router.get("/openapi.yaml") { _, _ -> Response in
        var headers = HTTPFields()
        headers[.contentType] = "application/yaml"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
    }
    router.get("/healthz") { _, _ in "ok\n" }
    router.get("/readyz") { _, _ -> Response in
        let ready = dependencies.isReady()
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(
            status: ready ? .ok : .serviceUnavailable, headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: ready ? "ready\n" : "not ready: broker unreachable\n")))
    }
    return Application(
        responder: RequestMetrics(OperationRouter(router: router, handler: identityToolkit.handleOperation, enabled: routeOperationsFirst)),
        server: .http1(configuration: .init(additionalChannelHandlers: [RequestBodyDeadline(timeout: idleTimeout)], idleTimeout: idleTimeout)),
        configuration: .init(
            address: .hostname(configuration.http.host, port: configuration.http.port), serverName: "herald-api",
            // At the cap the listener stops accepting (new connections wait in the backlog) until one closes.
            availableConnectionsDelegate: .maximum(configuration.http.maxConnections, logger: logger)),
        services: dependencies.services, logger: logger)
}
