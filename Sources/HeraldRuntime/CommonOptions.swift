import ArgumentParser
import HeraldCore
import Logging

/// Options every Herald executable takes.
public struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Configuration file (default: $HERALD_CONFIG, else config/herald.yaml).")
    public var config: String?

    public init() {}
}

extension CommonOptions {
    /// The start of every long-running executable: load and validate the configuration (exit 78 on
    /// error), bootstrap logging and metrics, and log "starting" with the file used and `details`.
    public func boot(
        _ executable: String, details: (HeraldConfiguration) -> Logger.Metadata = { _ in [:] }
    ) throws -> (configuration: HeraldConfiguration, logger: Logger) {
        let (configuration, path) = try ConfigurationLoader.loadOrExit(path: config)
        HeraldLogging.bootstrap(configuration.logging)
        HeraldMetrics.bootstrap()
        let logger = Logger(label: executable)
        logger.info("starting", metadata: details(configuration).merging(["config": .string(path)]) { $1 })
        return (configuration, logger)
    }
}
