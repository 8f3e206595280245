import ArgumentParser
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldStore
import HeraldWorker
import Logging

/// herald-sms-worker: consumes `<exchange>.sms` and sends through the configured providers.
@main
struct HeraldSMSWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-sms-worker", abstract: "Deliver SMS jobs from RabbitMQ through the configured providers.", version: BuildInfo.versionLine
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-sms-worker") {
            ["providers": .string($0.sms.providers.map { "\($0.name) (\($0.kind.rawValue))" }.joined(separator: ", "))]
        }

        let store = try await SQLStore.open(configuration.store, logger: logger)
        let keys = HeraldKeys(master: try KeyMaterial.sealingKey(configuration))
        let client = CurlClient(logger: logger, pooledConnections: configuration.workers.settings(for: .sms).concurrency)
        let channels = SMSChannels.make(configuration.sms, client: client, print: LineOutput.standardOutput.write)
        let handler = SMSJobHandler(settings: configuration.sms, channels: channels, keys: keys)
        try await WorkerProcess.run(handler: handler, ledger: store, keys: keys, configuration: configuration, logger: logger)
    }
}
