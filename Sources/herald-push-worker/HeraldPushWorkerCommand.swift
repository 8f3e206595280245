import ArgumentParser
import Foundation
import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldWorker
import Logging
import ServiceLifecycle
import UnixSignals

/// herald-push-worker: consumes `<exchange>.push` and delivers the silent verification pushes that
/// `verifyClient` asked for.
@main
struct HeraldPushWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-push-worker", abstract: "Deliver silent app-verification pushes from RabbitMQ over APNs.")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, path) = try ConfigurationLoader.loadOrExit(path: options.config)
        HeraldLogging.bootstrap(configuration.logging)
        HeraldMetrics.bootstrap()
        let logger = Logger(label: "herald-push-worker")
        logger.info("starting", metadata: ["config": .string(path), "provider": .string(configuration.push.provider)])

        let store = try SQLiteStore(url: configuration.store.url)
        let keys = HeraldKeys(master: try KeyMaterial.sealingKey(configuration))
        let delivery: any PushDelivery
        if configuration.push.provider == "console" {
            delivery = ConsolePushChannel()
        } else {
            let token = try ConfigurationLoader.orExit { try Self.providerToken(configuration.push) }
            delivery = APNsChannel(
                settings: .init(url: configuration.push.apnsURL, caFile: configuration.push.caFile, timeout: configuration.push.timeout),
                token: token, logger: logger)
        }
        let (consumer, publisher, topology) = WorkerService.connections(configuration: configuration, type: .push, logger: logger)
        let worker = WorkerService(
            handler: PushJobHandler(delivery: delivery, keys: keys, tokens: store, logger: logger),
            ledger: store,
            consumer: consumer, publisher: publisher, topology: topology, settings: .init(configuration.workers.push), logger: logger)
        let health = HealthServer(
            host: configuration.http.host, port: configuration.workers.push.metricsPort, logger: logger, isReady: { worker.isReady },
            onListening: { port in logger.info("health and metrics listening", metadata: ["port": .stringConvertible(port)]) })
        // Shut down in reverse order: the worker drains first, the health endpoint goes last.
        let group = ServiceGroup(
            configuration: .init(services: [health, worker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// The provider token signer from `push.apns.{keyId, teamId, keyFile}`; a missing or unreadable key
    /// is a configuration error naming the key, not a crash at the first push.
    static func providerToken(_ push: HeraldConfiguration.Push) throws -> APNsProviderToken {
        guard let keyId = push.keyId, let teamId = push.teamId, let keyFile = push.keyFile else {
            throw ConfigError(
                key: "push.apns.keyId",
                problem: "provider apns needs the .p8 key: set push.apns.keyId, teamId and keyFile (or provider: console with devMode: true)")
        }
        guard let data = FileManager.default.contents(atPath: keyFile), data.isEmpty == false else {
            throw ConfigError(key: "push.apns.keyFile", problem: "cannot read \(keyFile)")
        }
        do {
            return try APNsProviderToken(keyPEM: String(decoding: data, as: UTF8.self), keyID: keyId, teamID: teamId)
        } catch {
            throw ConfigError(key: "push.apns.keyFile", problem: "\(keyFile) is not a PKCS#8 P-256 private key (an AuthKey_<keyId>.p8 file)")
        }
    }
}
