import ArgumentParser
import HeraldAPI
import HeraldCore
import HeraldRuntime
import Hummingbird
import Logging
import Synchronization

/// herald-api: the Identity Toolkit-compatible front API.
@main
struct HeraldAPICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-api", abstract: "Serve the Identity Toolkit-compatible API and queue delivery jobs.", version: BuildInfo.versionLine)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-api") { _ in ["allocator": .string(Allocator.description)] }
        // The metrics listener (loopback by default, so the public port does not expose them) binds
        // first: a taken port stops herald-api before it connects to the store or the broker.
        let readiness = Readiness()
        let metrics = try await HealthServer(
            host: configuration.http.metricsHost, port: configuration.http.metricsPort, idleTimeout: configuration.http.idleTimeout,
            maxConnections: configuration.http.maxConnections, isReady: { readiness.isReady },
            onListening: { port in
                logger.info("metrics listening", metadata: ["host": .string(configuration.http.metricsHost), "port": .stringConvertible(port)])
            }
        ).bindOrExit(key: "http.metricsPort")
        var dependencies = try await APIDependencies.live(
            configuration: configuration, sealingKey: try KeyMaterial.sealingKey(configuration),
            signingKeyPEM: try KeyMaterial.idTokenSigningKey(configuration, generate: TokenIssuer.generatePrivateKeyPEM),
            logger: logger)
        readiness.set(dependencies.isReady)
        dependencies.services.append(metrics)
        try await buildApplication(dependencies, logger: logger).runService()
    }
}

/// `/readyz` of the metrics listener, which binds before the store and broker it reports on exist.
final class Readiness: Sendable {
    private let check = Mutex<(@Sendable () -> Bool)?>(nil)
    var isReady: Bool { check.withLock { $0 }?() ?? false }
    func set(_ isReady: @escaping @Sendable () -> Bool) { check.withLock { $0 = isReady } }
}
