import Foundation
import HeraldChannels
import HeraldCore

/// The type-specific part of a worker: how a job becomes a provider call. Everything around it
/// (expiry, idempotency, retries, routing between providers, dead letters, acks) is the same for every
/// type and lives in `WorkerService`.
public protocol JobHandler: Sendable {
    /// The job type this handler delivers (and the queue it consumes).
    var type: JobType { get }
    /// Who receives the job (for the ledger and logs).
    func destination(of job: Job) -> String
    /// Renders and sends the job once, through the handler's only provider.
    func deliver(_ job: Job, now: Date) async -> DeliveryReport
    /// Renders and sends the job once through `provider` (one of `providers`); handlers with one
    /// provider need not implement it.
    func deliver(_ job: Job, via provider: String, now: Date) async -> DeliveryReport
    /// The ISO region a job goes to, for per-country metrics ("" when not applicable).
    func region(of job: Job) -> String
    /// Limits per destination a send must pass first (spacing per number), shared by every worker
    /// process through the store.
    func spacingChecks(for job: Job) -> [LimitCheck]
    /// The providers jobs may go through, each with its rate, capacity and breaker.
    var providers: [ProviderSlot] { get }
    /// The providers, in order, that may carry `job` (its route); the first that may be called takes it.
    func chain(for job: Job) -> [String]
    /// The provider the jobs go through when there is one (`console`, `smtp`, `apns`).
    var providerName: String { get }
    /// What one segment costs in `region` (`region(of:)`; `sms.prices`), for `herald_sms_cost_total`; nil: not priced.
    func price(inRegion region: String) -> SMSSettings.Prices.Price?
    /// The least time between two jobs to one destination (zero: none), for the start-up log and metrics.
    var perDestinationSpacing: Duration { get }
    /// Provider error codes known before any answer (`SMSChannel.knownErrorCodes`), by provider.
    var knownErrorCodes: [String] { get }
    /// The attempts a job carries from earlier deliveries (which provider each met, and how), so that
    /// a retry goes where the route says after them.
    func attempts(in job: Job) -> [RouteChoice.Attempt]
    /// `job` carrying `attempts` for its next delivery (nil: the handler keeps no attempts).
    func carrying(_ attempts: [RouteChoice.Attempt], in job: Job) -> Job?
}

/// A provider as the worker sees it: a name, the rate shared by every worker through the store, how
/// many calls this process may have open at once, and its breaker (nil: none).
public struct ProviderSlot: Sendable {
    public var name: String
    public var rate: RatePolicy?
    public var maxInFlight: Int?
    public var breaker: CircuitBreaker.Settings?

    public init(name: String, rate: RatePolicy? = nil, maxInFlight: Int? = nil, breaker: CircuitBreaker.Settings? = nil) {
        self.name = name
        self.rate = rate
        self.maxInFlight = maxInFlight
        self.breaker = breaker
    }

    /// The shared rate as a limit (its key names the provider and the rate).
    var rateCheck: LimitCheck? { rate.map { LimitCheck(kind: .provider, scope: name, subject: name, policy: $0) } }
}

extension JobHandler {
    public func price(inRegion region: String) -> SMSSettings.Prices.Price? { nil }
    public var perDestinationSpacing: Duration { .zero }
    public var knownErrorCodes: [String] { [] }
    public var providers: [ProviderSlot] { [ProviderSlot(name: providerName)] }
    public func chain(for job: Job) -> [String] { [providerName] }
    public func deliver(_ job: Job, via provider: String, now: Date) async -> DeliveryReport { await deliver(job, now: now) }
    public func attempts(in job: Job) -> [RouteChoice.Attempt] { [] }
    public func carrying(_ attempts: [RouteChoice.Attempt], in job: Job) -> Job? { nil }

    /// What the ledger keeps about `job` when a worker claims it for `provider`.
    func description(of job: Job, provider: String, producer: String?) -> DeliveryDescription {
        DeliveryDescription(template: job.templateName, locale: job.locale, provider: provider, producer: producer)
    }
}

/// SMS jobs: open the sealed code, render the text template, hand it to the provider the route chose.
public struct SMSJobHandler: JobHandler {
    public let type = JobType.sms
    /// By name, and in `sms.providers` order.
    let channels: [String: any SMSChannel]
    public let providers: [ProviderSlot]
    let routes: SMSRoutes
    let sealer: Sealer
    let templates: TemplateCatalog
    let perNumberSpacing: Duration
    let prices: SMSSettings.Prices

    /// `providers` describe the `channels` (same names); `routes` say which carry a destination
    /// (nil: all, in order); `perNumberSpacing` keeps SMS to one number apart (zero: off); `prices`
    /// price the segments sent.
    public init(
        channels: [any SMSChannel], providers: [ProviderSlot], routes: SMSRoutes? = nil, keys: HeraldKeys, templates: TemplateCatalog,
        perNumberSpacing: Duration = .zero, prices: SMSSettings.Prices = .init()
    ) {
        precondition(channels.map(\.name) == providers.map(\.name), "one provider slot per channel, in order")
        self.channels = Dictionary(uniqueKeysWithValues: channels.map { ($0.name, $0) })
        self.providers = providers
        self.routes = routes ?? SMSRoutes(defaultChain: channels.map(\.name))
        self.sealer = Sealer(key: keys.sealing)
        self.templates = templates
        self.perNumberSpacing = perNumberSpacing
        self.prices = prices
    }

    /// The providers of `sms.providers` through `channels` (`SMSChannels.make`), each with its rate,
    /// capacity and breaker. The single provider of a file without that list has its rate only, as it
    /// has nowhere to fail over to.
    public init(settings: SMSSettings, channels: [any SMSChannel], keys: HeraldKeys) {
        let listed = settings.providersListed
        let slots = settings.providers.map { provider in
            ProviderSlot(
                name: provider.name, rate: provider.rate, maxInFlight: listed ? provider.maxInFlight : nil,
                breaker: listed && provider.kind != .console ? provider.breaker : nil)
        }
        self.init(
            channels: channels, providers: slots, routes: settings.routes, keys: keys, templates: settings.templates,
            perNumberSpacing: settings.perNumberSpacing, prices: settings.prices)
    }

    /// One provider, `providerRate` its shared rate (nil: unlimited), no breaker.
    public init(
        channel: any SMSChannel, keys: HeraldKeys, templates: TemplateCatalog, providerRate: RatePolicy? = nil,
        perNumberSpacing: Duration = .zero, prices: SMSSettings.Prices = .init()
    ) {
        self.init(
            channels: [channel], providers: [ProviderSlot(name: channel.name, rate: providerRate)], keys: keys, templates: templates,
            perNumberSpacing: perNumberSpacing, prices: prices)
    }

    public func price(inRegion region: String) -> SMSSettings.Prices.Price? { prices.price(for: region) }

    public var perDestinationSpacing: Duration { perNumberSpacing }

    public var knownErrorCodes: [String] {
        var seen: Set<String> = []
        return providers.compactMap { channels[$0.name] }.flatMap(\.knownErrorCodes).filter { seen.insert($0).inserted }
    }

    public func spacingChecks(for job: Job) -> [LimitCheck] {
        guard perNumberSpacing > .zero else { return [] }
        return [
            LimitCheck(
                kind: .spacing, scope: job.project, subject: destination(of: job), policy: RatePolicy(limit: 1, period: perNumberSpacing, burst: 1))
        ]
    }

    public var providerName: String { providers[0].name }

    public func chain(for job: Job) -> [String] {
        routes.chain(for: destination(of: job), region: region(of: job))
    }

    /// The attempts travel in the job as `params.route` (`twilio:failure,vonage:later`), signed with it.
    public func attempts(in job: Job) -> [RouteChoice.Attempt] {
        guard case .sms(let message) = job.payload, let route = message.params[Self.routeParameter] else { return [] }
        return route.split(separator: ",").prefix(32).compactMap { entry in
            let parts = entry.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, channels[String(parts[0])] != nil else { return nil }
            switch parts[1] {
            case "failure": return RouteChoice.Attempt(provider: String(parts[0]), met: .providerFailure)
            case "later": return RouteChoice.Attempt(provider: String(parts[0]), met: .retryLater)
            default: return nil
            }
        }
    }

    public func carrying(_ attempts: [RouteChoice.Attempt], in job: Job) -> Job? {
        guard case .sms(var message) = job.payload, attempts.isEmpty == false else { return nil }
        message.params[Self.routeParameter] = attempts.suffix(32).map { "\($0.provider):\($0.met == .providerFailure ? "failure" : "later")" }
            .joined(separator: ",")
        var copy = job
        copy.payload = .sms(message)
        return copy
    }

    static let routeParameter = "route"

    public func destination(of job: Job) -> String {
        guard case .sms(let message) = job.payload else { return "" }
        return message.to
    }

    public func region(of job: Job) -> String {
        (try? PhoneNumber(parsing: destination(of: job)))?.region ?? ""
    }

    public func deliver(_ job: Job, now: Date) async -> DeliveryReport {
        await deliver(job, via: providerName, now: now)
    }

    public func deliver(_ job: Job, via provider: String, now: Date) async -> DeliveryReport {
        guard case .sms(let message) = job.payload else { return DeliveryReport(.permanent(reason: "not an sms job")) }
        guard let channel = channels[provider] else { return DeliveryReport(.providerFailure(reason: "no provider named \(provider)")) }
        let text: String
        switch render(message, job: job, now: now) {
        case .success(let rendered): text = rendered
        case .failure(let reason): return DeliveryReport(.permanent(reason: reason.description))
        }
        var report = await channel.deliver(
            OutgoingSMS(jobID: job.id, project: job.project, to: message.to, body: text, expiresAt: job.expiresAt, now: now))
        report.segments = SMSSegments(text)
        return report
    }

    struct RenderFailure: Error, CustomStringConvertible {
        var description: String
    }

    func render(_ message: SMSMessage, job: Job, now: Date) -> Result<String, RenderFailure> {
        switch message.template {
        case .text:
            guard let text = message.params["text"], text.isEmpty == false else {
                return .failure(RenderFailure(description: "template 'text' needs params.text"))
            }
            return .success(text)
        case .verification, .mfa:
            guard let template = templates.template(message.template.rawValue, locale: job.locale)?.template else {
                return .failure(RenderFailure(description: "no SMS template '\(message.template.rawValue)'"))
            }
            guard let sealed = message.params["codeSealed"] else {
                return .failure(RenderFailure(description: "params.codeSealed is missing"))
            }
            let code: String
            do {
                code = try sealer.open(sealed, jobID: job.id, destination: message.to)
            } catch {
                return .failure(
                    RenderFailure(description: "params.codeSealed does not open with this codes.sealingKey (or was sealed for another job or number)")
                )
            }
            let minutes = max(1, Int((job.expiresAt.timeIntervalSince(now) / 60).rounded(.up)))
            let text = template.render(["code": code, "app": message.params["app"] ?? job.project, "minutes": String(minutes)])
            return .success(
                SMSText.compose(text: text, code: code, androidAppHash: message.params["appHash"], originDomain: message.params["originDomain"]))
        }
    }
}
