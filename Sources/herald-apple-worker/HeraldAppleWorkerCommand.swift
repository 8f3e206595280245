import ArgumentParser
import Foundation
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldStore
import HeraldWorker
import Logging

/// herald-apple-worker: consumes `<exchange>.apple` and revokes Sign in with Apple tokens
/// (`accounts:revokeToken`), with each project's Sign in with Apple key.
@main
struct HeraldAppleWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-apple-worker", abstract: "Revoke Sign in with Apple tokens from RabbitMQ jobs.", version: BuildInfo.versionLine)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let (configuration, logger) = try options.boot("herald-apple-worker") { configuration in
            ["projects": .string(configuration.projects.filter { $0.apple.canRevoke }.map(\.id).joined(separator: ","))]
        }
        let store = try await SQLStore.open(configuration.store, logger: logger)
        let keys = HeraldKeys(master: try KeyMaterial.sealingKey(configuration))
        var projects: [String: AppleJobHandler.Project] = [:]
        for project in configuration.projects where project.apple.canRevoke {
            let secrets = try ConfigurationLoader.orExitCode { try Self.clientSecrets(project) }
            projects[project.id] = AppleJobHandler.Project(
                endpoint: .init(tokenURL: project.apple.tokenUrl, revokeURL: project.apple.revokeUrl, caFile: project.apple.caFile),
                secrets: secrets)
        }
        if projects.isEmpty {
            logger.notice("no project has a Sign in with Apple key (projects[].apple.teamId, keyId, keyFile): apple jobs will fail as misconfigured")
        }
        let handler = AppleJobHandler(channel: AppleTokenChannel(client: CurlClient(logger: logger)), projects: projects, keys: keys)
        try await WorkerProcess.run(handler: handler, ledger: store, keys: keys, configuration: configuration, logger: logger)
    }

    /// The client-secret signer of a project; an unreadable or wrong key is a configuration error naming
    /// the key, not a failure at the first job.
    static func clientSecrets(_ project: ProjectSettings) throws -> AppleClientSecret {
        let key = "projects[\(project.id)].apple.keyFile"
        guard let keyID = project.apple.keyId, let teamID = project.apple.teamId, let keyFile = project.apple.keyFile else {
            throw ConfigError(key: key, problem: "teamId, keyId and keyFile are set together")
        }
        guard let data = FileManager.default.contents(atPath: keyFile), data.isEmpty == false else {
            throw ConfigError(key: key, problem: "cannot read \(keyFile)")
        }
        do {
            return try AppleClientSecret(keyPEM: String(decoding: data, as: UTF8.self), keyID: keyID, teamID: teamID)
        } catch {
            throw ConfigError(key: key, problem: "\(keyFile) is not a PKCS#8 P-256 private key (an AuthKey_<keyId>.p8 file)")
        }
    }
}
