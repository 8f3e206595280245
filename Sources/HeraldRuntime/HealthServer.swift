import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// `/healthz`, `/readyz` and `/metrics` for a worker process, and herald-api's metrics listener (kept off
/// the public port).
///
/// `/healthz` answers while the process runs; `/readyz` answers 200 only while `isReady()` holds
/// (the broker consumer is connected and the store opened), 503 otherwise, so orchestrators stop
/// routing to and restarting at the right moments.
public struct HealthServer: Service {
    let application: Application<RouterResponder<BasicRequestContext>>

    public init(
        host: String, port: Int, idleTimeout: Duration, logger: Logger, isReady: @escaping @Sendable () -> Bool,
        onListening: @escaping @Sendable (Int) -> Void = { _ in }
    ) {
        let router = Router()
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/readyz") { _, _ -> Response in
            let ready = isReady()
            return Response(status: ready ? .ok : .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: ready ? "ready\n" : "not ready\n")))
        }
        router.get("/metrics") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: HeraldMetrics.exposition())))
        }
        self.application = Application(
            router: router, server: .http1(configuration: .init(idleTimeout: TimeAmount(idleTimeout))),
            configuration: .init(address: .hostname(host, port: port), serverName: "herald-worker"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? port) }, logger: logger)
    }

    public func run() async throws {
        try await application.run()
    }
}

extension TimeAmount {
    /// The NIO form of a configured duration.
    public init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
