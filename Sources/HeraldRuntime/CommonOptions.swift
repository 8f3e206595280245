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
        for project in configuration.projects {
            let real = project.phone.testNumbers.keys.filter { FictionalNumbers.contains($0) == false }.sorted()
            if real.isEmpty == false {
                logger.warning(
                    "test numbers that are real numbers have fixed codes: whoever owns them can be signed into (phone.testNumbersAllowReal)",
                    metadata: [
                        "project": .string(project.id),
                        "numbers": .string(real.compactMap { try? PhoneNumber(parsing: $0).masked }.joined(separator: ",")),
                    ])
            }
        }
        for finding in UnsafeSettings.findings(in: configuration) {
            logger.warning(
                "unsafe setting outside devMode (herald-admin check lists them)",
                metadata: ["key": .string(finding.key), "problem": .string(finding.problem)])
        }
        if configuration.ignoredEnvironment.isEmpty == false {
            logger.warning(
                "ignoring HERALD_* variables that are no configuration key (Kubernetes service links or foreign names)",
                metadata: ["variables": .string(configuration.ignoredEnvironment.joined(separator: ","))])
        }
        return (configuration, logger)
    }
}

extension CommonOptions {
    /// The command line with every `--config FILE` / `--config=FILE` moved to the end, so a command
    /// with subcommands (herald-admin) takes it before or after them: `herald-admin --config x topology
    /// status` and `herald-admin topology status --config x` mean the same. The argument parser only
    /// reads options after the last subcommand name. A `--config` with no value is left in place for the
    /// parser to report.
    public static func movingConfigLast(_ arguments: [String]) -> [String] {
        var rest: [String] = []
        var moved: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" {
                rest += arguments[index...]
                break
            }
            if argument.hasPrefix("--config=") {
                moved.append(argument)
            } else if argument == "--config", index + 1 < arguments.endIndex {
                moved += [argument, arguments[index + 1]]
                index += 1
            } else {
                rest.append(argument)
            }
            index += 1
        }
        guard let separator = rest.firstIndex(of: "--") else { return rest + moved }
        return Array(rest[..<separator]) + moved + Array(rest[separator...])
    }
}
