import Foundation
import HeraldChannels
import HeraldCore

/// The type-specific part of a worker: how a job becomes a provider call. Everything around it
/// (expiry, idempotency, retries, dead letters, acks) is the same for every type and lives in
/// `WorkerService`.
public protocol JobHandler: Sendable {
    /// The job type this handler delivers (and the queue it consumes).
    var type: JobType { get }
    /// Who receives the job (for the ledger and logs).
    func destination(of job: Job) -> String
    /// Renders and sends the job once.
    func deliver(_ job: Job, now: Date) async -> DeliveryReport
    /// The ISO region a job goes to, for per-country metrics ("" when not applicable).
    func region(of job: Job) -> String
    /// Limits per destination a send must pass first (spacing per number), shared by every worker
    /// process through the store.
    func spacingChecks(for job: Job) -> [LimitCheck]
    /// The provider's own rate, shared the same way and handed out in delivery order
    /// (`ProviderPacer`); nil when unlimited.
    var providerRate: LimitCheck? { get }
    /// The provider the jobs go through (`http`, `console`, `smtp`, `apns`), kept on the ledger row.
    var providerName: String { get }
    /// What one segment costs in `region` (`region(of:)`; `sms.prices`), for `herald_sms_cost_total`; nil: not priced.
    func price(inRegion region: String) -> SMSSettings.Prices.Price?
    /// The least time between two jobs to one destination (zero: none), for the start-up log and metrics.
    var perDestinationSpacing: Duration { get }
    /// Provider error codes known before any answer (`DeliveryChannel.knownErrorCodes`).
    var knownErrorCodes: [String] { get }
}

extension JobHandler {
    public func price(inRegion region: String) -> SMSSettings.Prices.Price? { nil }
    public var perDestinationSpacing: Duration { .zero }
    public var knownErrorCodes: [String] { [] }

    /// What the ledger keeps about `job` when a worker claims it.
    func description(of job: Job, producer: String?) -> DeliveryDescription {
        DeliveryDescription(template: job.templateName, locale: job.locale, provider: providerName, producer: producer)
    }
}

/// SMS jobs: open the sealed code, render the text template, hand it to the channel.
public struct SMSJobHandler: JobHandler {
    public let type = JobType.sms
    let channel: any DeliveryChannel
    let sealer: Sealer
    let templates: TemplateCatalog
    let providerRatePolicy: RatePolicy?
    let perNumberSpacing: Duration
    let prices: SMSSettings.Prices

    /// `providerRate` caps sends through `channel` across all workers (nil: unlimited);
    /// `perNumberSpacing` keeps SMS to one number apart (zero: off); `prices` price the segments sent.
    public init(
        channel: any DeliveryChannel, keys: HeraldKeys, templates: TemplateCatalog, providerRate: RatePolicy? = nil,
        perNumberSpacing: Duration = .zero, prices: SMSSettings.Prices = .init()
    ) {
        self.channel = channel
        self.sealer = Sealer(key: keys.sealing)
        self.templates = templates
        self.providerRatePolicy = providerRate
        self.perNumberSpacing = perNumberSpacing
        self.prices = prices
    }

    public func price(inRegion region: String) -> SMSSettings.Prices.Price? { prices.price(for: region) }

    public var perDestinationSpacing: Duration { perNumberSpacing }

    public var knownErrorCodes: [String] { channel.knownErrorCodes }

    public func spacingChecks(for job: Job) -> [LimitCheck] {
        guard perNumberSpacing > .zero else { return [] }
        return [
            LimitCheck(
                kind: .spacing, scope: job.project, subject: destination(of: job), policy: RatePolicy(limit: 1, period: perNumberSpacing, burst: 1))
        ]
    }

    public var providerRate: LimitCheck? {
        providerRatePolicy.map { LimitCheck(kind: .provider, scope: channel.name, subject: channel.name, policy: $0) }
    }

    public var providerName: String { channel.name }

    public func destination(of job: Job) -> String {
        guard case .sms(let message) = job.payload else { return "" }
        return message.to
    }

    public func region(of job: Job) -> String {
        (try? PhoneNumber(parsing: destination(of: job)))?.region ?? ""
    }

    public func deliver(_ job: Job, now: Date) async -> DeliveryReport {
        guard case .sms(let message) = job.payload else { return DeliveryReport(.permanent(reason: "not an sms job")) }
        let text: String
        switch render(message, job: job, now: now) {
        case .success(let rendered): text = rendered
        case .failure(let reason): return DeliveryReport(.permanent(reason: reason.description))
        }
        let outcome = await channel.deliver(OutgoingSMS(jobID: job.id, project: job.project, to: message.to, body: text, expiresAt: job.expiresAt))
        return DeliveryReport(outcome, segments: SMSSegments(text))
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
