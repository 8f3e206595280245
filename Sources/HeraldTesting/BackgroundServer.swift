import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A Hummingbird app on 127.0.0.1 with a free port, running in the background of a test or benchmark.
public final class BackgroundServer: Sendable {
    public let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>

    /// Starts `router` and returns once the server listens; `server` picks the protocol (plain HTTP/1.1
    /// unless told otherwise, e.g. `.http2Upgrade(tlsConfiguration:)` for a TLS peer).
    public static func start(
        router: Router<BasicRequestContext>, server: HTTPServerBuilder = .http1(), logger: Logger = quietLogger()
    ) async throws -> BackgroundServer {
        let bound = Mutex<Int?>(nil)
        let app = Application(
            router: router, server: server, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in bound.withLock { $0 = channel.localAddress?.port } }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task { try await group.run() }
        // Generous: binding takes milliseconds, but Swift Testing starts every test at once, and until the
        // CPU-heavy starts (keys, processes) are through, this task may not run for many seconds.
        let deadline = ContinuousClock.now + .seconds(60)
        while bound.withLock({ $0 }) == nil {
            guard ContinuousClock.now < deadline else { throw TestFailure("test server did not start") }
            try await Task.sleep(for: .milliseconds(10))
        }
        return BackgroundServer(port: bound.withLock { $0 }!, group: group, task: task)
    }

    init(port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        self.group = group
        self.task = task
    }

    /// Stops the server and waits for it.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}

/// A logger that drops everything (servers in tests are not under test).
public func quietLogger(_ label: String = "test") -> Logger {
    Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
}
