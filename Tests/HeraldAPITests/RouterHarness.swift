import Foundation
import HTTPTypes
import HeraldAPI
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore

/// herald-api in-process through Hummingbird's `.router` test mode, with the memory store and the memory
/// publisher: no broker, no database, no socket. For what needs neither (wire errors, validation, limit
/// decisions); what involves the broker or a client's address runs with `APIHarness` instead.
struct RouterHarness: JobOpening {
    let settings: TestConfiguration
    let configuration: HeraldConfiguration
    let logs = CapturedLogs()
    let clock = TestClock.running()
    let store = MemoryStore()
    let publisher = MemoryPublisher()

    init(_ adjust: (inout TestConfiguration) -> Void = { _ in }) throws {
        var settings = TestConfiguration()
        adjust(&settings)
        self.settings = settings
        self.configuration = try settings.parsed()
    }

    var keys: HeraldKeys { HeraldKeys(master: configuration.codes.sealingKey!) }

    /// `routeOperationsFirst: false` bypasses `OperationRouter` (every request through Hummingbird's router).
    func run(routeOperationsFirst: Bool = true, _ body: @escaping @Sendable (RouterClient) async throws -> Void) async throws {
        let dependencies = APIDependencies(
            configuration: configuration, store: store, publisher: publisher, keys: keys,
            tokens: try await TokenIssuer(privateKeyPEM: TestKeys.idTokenSigningKeyPEM, idTokenTTL: configuration.tokens.idTokenTTL),
            clock: clock, isReady: { true })
        try await buildApplication(dependencies, logger: logs.logger("herald-api"), routeOperationsFirst: routeOperationsFirst).test(.router) {
            client in
            try await body(RouterClient(client: client))
        }
    }

    /// The SMS jobs the API published.
    func publishedJobs() -> [Job] { publisher.jobs(.sms) }
}

/// `HeraldClient`'s calls over the router test client.
struct RouterClient: Sendable {
    let client: any TestClientProtocol

    func post(_ path: String, apiKey: String? = nil, json: [String: any Sendable], headers: [(String, String)] = []) async throws
        -> HeraldClient.Answer
    {
        try await send(
            "POST", path, apiKey: apiKey, body: try JSONSerialization.data(withJSONObject: json), contentType: "application/json", headers: headers)
    }

    func get(_ path: String) async throws -> HeraldClient.Answer {
        try await send("GET", path, apiKey: nil, body: nil, contentType: nil)
    }

    func send(
        _ method: String, _ path: String, apiKey: String?, body: Data?, contentType: String?, headers: [(String, String)] = []
    ) async throws -> HeraldClient.Answer {
        var uri = path
        if let apiKey { uri += (path.contains("?") ? "&" : "?") + "key=\(apiKey)" }
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        for (name, value) in headers { if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) } }
        let response = try await client.execute(
            uri: uri, method: HTTPRequest.Method(method) ?? .get, headers: fields, body: body.map { ByteBuffer(bytes: $0) })
        return HeraldClient.Answer(
            status: response.status.code, body: Data(response.body.readableBytesView),
            headers: response.headers.map { (name: $0.name.canonicalName, value: $0.value) })
    }
}
