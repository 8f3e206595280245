import Foundation
import HeraldChannels
import HeraldCore

/// Apple jobs: revoke a user's Sign in with Apple tokens. A job arrives with the authorization code
/// (sealed); the handler exchanges it at `/auth/token` for a refresh token and revokes that at
/// `/auth/revoke`. The exchange spends the code, so when the revocation then fails the retry carries
/// the refresh token (sealed) instead (`DeliveryReport.continuation`), with a longer life: a refresh
/// token does not expire like a code does.
public struct AppleJobHandler: JobHandler {
    public let type = JobType.apple
    public let providerName = "apple"
    let channel: AppleTokenChannel
    let projects: [String: Project]
    let sealer: Sealer

    /// How long a continuation (a refresh token to revoke) keeps being retried.
    static let continuationLifetime: TimeInterval = 7 * 86_400

    /// One project's revocation settings.
    public struct Project: Sendable {
        public var endpoint: AppleTokenChannel.Endpoint
        public var secrets: AppleClientSecret

        public init(endpoint: AppleTokenChannel.Endpoint, secrets: AppleClientSecret) {
            self.endpoint = endpoint
            self.secrets = secrets
        }
    }

    /// `projects` maps project ids to their settings; jobs of other projects fail as misconfigured.
    public init(channel: AppleTokenChannel, projects: [String: Project], keys: HeraldKeys) {
        self.channel = channel
        self.projects = projects
        self.sealer = Sealer(key: keys.sealing)
    }

    public func destination(of job: Job) -> String { job.recipient }
    public func region(of job: Job) -> String { "" }
    public func spacingChecks(for job: Job) -> [LimitCheck] { [] }

    public func deliver(_ job: Job, now: Date) async -> DeliveryReport {
        guard case .apple(let message) = job.payload else { return DeliveryReport(.permanent(reason: "not an apple job")) }
        guard let project = projects[job.project] else {
            return DeliveryReport(
                .permanent(
                    reason: "project \(job.project) has no Apple key for revocation (projects[].apple.teamId, keyId, keyFile)", code: "misconfigured")
            )
        }
        let secret: String
        do {
            secret = try await project.secrets.secret(clientID: message.clientId, now: now)
        } catch {
            return DeliveryReport(.permanent(reason: "cannot sign the Apple client secret: \(error)", code: "misconfigured"))
        }
        func open(_ name: String) -> String? {
            message.params[name].flatMap { try? sealer.open($0, jobID: job.id, destination: message.user) }
        }
        if message.params["refreshTokenSealed"] != nil {
            guard let refresh = open("refreshTokenSealed") else {
                return DeliveryReport(.permanent(reason: "params.refreshTokenSealed does not open with this codes.sealingKey"))
            }
            return DeliveryReport(await channel.revoke(refreshToken: refresh, clientID: message.clientId, secret: secret, at: project.endpoint))
        }
        guard let code = open("authorizationCodeSealed") else {
            return DeliveryReport(.permanent(reason: "params.authorizationCodeSealed does not open with this codes.sealingKey"))
        }
        switch await channel.exchange(code: code, clientID: message.clientId, secret: secret, redirectURI: message.redirectUri, at: project.endpoint)
        {
        case .failed(let outcome):
            return DeliveryReport(outcome)
        case .refreshToken(let refresh):
            let outcome = await channel.revoke(refreshToken: refresh, clientID: message.clientId, secret: secret, at: project.endpoint)
            if case .sent = outcome { return DeliveryReport(outcome) }
            var continued = job
            continued.expiresAt = max(job.expiresAt, now.addingTimeInterval(Self.continuationLifetime))
            var carried = message
            carried.params = ["refreshTokenSealed": sealer.seal(refresh, jobID: job.id, destination: message.user)]
            continued.payload = .apple(carried)
            return DeliveryReport(outcome, continuation: continued)
        }
    }
}
