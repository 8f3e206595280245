import ArgumentParser
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldStore
import HeraldWorker
import Logging

/// herald-email-worker: consumes `<exchange>.email` and submits sign-in mails over SMTP.
@main
struct HeraldEmailWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-email-worker", abstract: "Deliver sign-in-link emails from RabbitMQ over SMTP.", version: BuildInfo.versionLine)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-email-worker") {
            ["provider": .string($0.email.provider.rawValue), "smtp": .string($0.email.provider == .smtp ? $0.email.smtpURL : "-")]
        }
        let store = try await SQLStore.open(configuration.store, logger: logger)
        let keys = HeraldKeys(master: try KeyMaterial.sealingKey(configuration))
        let channel: any EmailChannel =
            configuration.email.provider == .console
            ? ConsoleEmailChannel(print: LineOutput.standardOutput.write)
            : SMTPChannel(
                client: CurlClient(logger: logger, pooledConnections: configuration.workers.settings(for: .email).concurrency),
                settings: configuration.email)
        let handler = EmailJobHandler(
            channel: channel, keys: keys, settings: configuration.email,
            providerRate: configuration.email.provider == .smtp ? configuration.email.rate : nil)
        try await WorkerProcess.run(handler: handler, ledger: store, keys: keys, configuration: configuration, logger: logger)
    }
}
