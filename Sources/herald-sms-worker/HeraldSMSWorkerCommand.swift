import ArgumentParser
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldStore
import HeraldWorker
import Logging

/// herald-sms-worker: consumes `<exchange>.sms` and sends through the configured provider.
@main
struct HeraldSMSWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-sms-worker", abstract: "Deliver SMS jobs from RabbitMQ through the configured provider.", version: BuildInfo.versionLine)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-sms-worker") { ["provider": .string($0.sms.provider.rawValue)] }

        let store = try await SQLStore.open(configuration.store, logger: logger)
        let keys = HeraldKeys(master: try KeyMaterial.sealingKey(configuration))
        let channel: any DeliveryChannel =
            configuration.sms.provider == .console
            ? ConsoleChannel(print: LineOutput.standardOutput.write)
            : HTTPGatewayChannel(
                client: CurlClient(logger: logger, pooledConnections: configuration.workers.settings(for: .sms).concurrency),
                settings: configuration.sms.http)
        let handler = SMSJobHandler(
            channel: channel, keys: keys, templates: configuration.sms.templates,
            providerRate: configuration.sms.provider == .http ? configuration.sms.http.rate : nil,
            perNumberSpacing: configuration.sms.perNumberSpacing, prices: configuration.sms.prices)
        try await WorkerProcess.run(handler: handler, ledger: store, keys: keys, configuration: configuration, logger: logger)
    }
}
