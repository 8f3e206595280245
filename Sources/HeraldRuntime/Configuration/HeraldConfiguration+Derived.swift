import HeraldAMQP
import HeraldChannels
import HeraldCore

extension Topology {
    /// The types an installation uses: `sms` and `email` always; `push` unless `push.provider` is
    /// `none`; `apple` only when a project can revoke Apple tokens (Sign in with Apple enabled, with its
    /// key). The queues of the others are not declared, watched or expected to have consumers.
    public static func types(in configuration: HeraldConfiguration) -> [JobType] {
        let apple = configuration.projects.contains { $0.apple.enabled && $0.apple.canRevoke }
        let push = configuration.push.provider != .none
        return supportedTypes.filter { ($0 != .apple || apple) && ($0 != .push || push) }
    }

    /// The topology `configuration` declares: its exchange, queue type, delivery limit and each
    /// worker's delay queues.
    public init(configuration: HeraldConfiguration) {
        self.init(
            exchange: configuration.amqp.exchange, queueType: configuration.amqp.queueType,
            deliveryLimit: configuration.amqp.deliveryLimit,
            retryDelays: Dictionary(uniqueKeysWithValues: JobType.allCases.map { ($0, configuration.workers.settings(for: $0).retryDelays) }),
            throttleDelays: Dictionary(uniqueKeysWithValues: JobType.allCases.map { ($0, configuration.workers.settings(for: $0).throttleDelays) }))
    }
}

extension ForeignJobPolicy {
    /// The policy of `configuration`'s producers.
    public init(configuration: HeraldConfiguration) {
        self.init(integrations: configuration.integrations, projects: configuration.projects, prefixDigits: configuration.limits.prefixDigits)
    }
}
