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
    /// The start of every long-running executable: load and validate the configuration (`ExitCode(78)`
    /// on error), bootstrap logging and metrics, and log "starting" with the file used and `details`.
    public func boot(
        _ executable: String, details: (HeraldConfiguration) -> Logger.Metadata = { _ in [:] }
    ) throws -> (configuration: HeraldConfiguration, logger: Logger) {
        LineOutput.installProcessWide()
        let (configuration, path) = try ConfigurationLoader.loadOrExitCode(path: config)
        HeraldLogging.bootstrap(configuration.logging)
        HeraldMetrics.bootstrap()
        let logger = Logger(label: executable)
        logger.info(
            "starting",
            metadata: details(configuration).merging(
                ["config": .string(path), "version": .string(BuildInfo.version), "revision": .string(BuildInfo.revision)]) { $1 })
        if configuration.ignoredEnvironment.isEmpty == false {
            logger.warning(
                "ignoring HERALD_* variables that are no configuration key (Kubernetes service links or foreign names)",
                metadata: ["variables": .string(configuration.ignoredEnvironment.joined(separator: ","))])
        }
        return (configuration, logger)
    }
}
