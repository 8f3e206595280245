import ArgumentParser
import HeraldAPI
import HeraldCore
import HeraldRuntime
import Hummingbird
import Logging

/// herald-api: the Identity Toolkit-compatible front API.
@main
struct HeraldAPICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-api", abstract: "Serve the Identity Toolkit-compatible API and queue delivery jobs.", version: BuildInfo.versionLine)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-api") { _ in ["allocator": .string(Allocator.description)] }
        var dependencies = try await APIDependencies.live(
            configuration: configuration, sealingKey: try KeyMaterial.sealingKey(configuration),
            signingKeyPEM: try KeyMaterial.idTokenSigningKey(configuration, generate: TokenIssuer.generatePrivateKeyPEM),
            logger: logger)
        // Metrics on their own listener (loopback by default), so the public port does not expose them.
        let isReady = dependencies.isReady
        dependencies.services.append(
            HealthServer(
                host: configuration.http.metricsHost, port: configuration.http.metricsPort, idleTimeout: configuration.http.idleTimeout,
                maxConnections: configuration.http.maxConnections, isReady: isReady,
                onListening: { port in
                    logger.info("metrics listening", metadata: ["host": .string(configuration.http.metricsHost), "port": .stringConvertible(port)])
                }))
        try await buildApplication(dependencies, logger: logger).runService()
    }
}
