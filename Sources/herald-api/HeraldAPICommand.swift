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
        commandName: "herald-api", abstract: "Serve the Identity Toolkit-compatible API and queue delivery jobs.")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-api")
        let dependencies = try await APIDependencies.live(
            configuration: configuration, sealingKey: try KeyMaterial.sealingKey(configuration),
            signingKeyPEM: try KeyMaterial.idTokenSigningKey(configuration, generate: TokenIssuer.generatePrivateKeyPEM),
            logger: logger, metrics: { HeraldMetrics.exposition() })
        try await buildApplication(dependencies, logger: logger).runService()
    }
}
