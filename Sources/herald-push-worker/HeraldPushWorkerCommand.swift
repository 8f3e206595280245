import ArgumentParser
import Foundation
import HeraldChannels
import HeraldCore
import HeraldRuntime
import HeraldStore
import HeraldWorker
import Logging

/// herald-push-worker: consumes `<exchange>.push` and delivers the silent verification pushes that
/// `verifyClient` asked for.
@main
struct HeraldPushWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-push-worker", abstract: "Deliver silent app-verification pushes from RabbitMQ over APNs.", version: BuildInfo.versionLine
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-push-worker") { ["provider": .string($0.push.provider.rawValue)] }
        if configuration.push.provider == .none {
            // Nothing will ever be queued for it; systemd's units do not restart on 78.
            LineOutput.standardError.write("herald: push.provider is none: no silent pushes are sent, so herald-push-worker is not needed")
            throw ExitCode(78)
        }

        let store = try await SQLStore.open(configuration.store, logger: logger)
        let keys = HeraldKeys(master: try KeyMaterial.sealingKey(configuration))
        let delivery: any PushDelivery
        if configuration.push.provider == .console {
            delivery = ConsolePushChannel(print: LineOutput.standardOutput.write)
        } else {
            let token = try ConfigurationLoader.orExitCode { try Self.providerToken(configuration.push) }
            delivery = APNsChannel(
                settings: .init(url: configuration.push.apnsURL, caFile: configuration.push.caFile, timeout: configuration.push.timeout),
                token: token, logger: logger)
        }
        try await WorkerProcess.run(
            handler: PushJobHandler(delivery: delivery, keys: keys, tokens: store, logger: logger), ledger: store, keys: keys,
            configuration: configuration, logger: logger)
    }

    /// The provider token signer from `push.apns.{keyId, teamId, keyFile}`; a missing or unreadable key
    /// is a configuration error naming the key, not a crash at the first push.
    static func providerToken(_ push: PushSettings) throws -> APNsProviderToken {
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
