import Foundation
import HeraldChannels
import HeraldCore

/// Email jobs: open the sealed link, render the locale's subject, text and HTML, build the MIME
/// message and hand it to the channel. Mail to Apple's private relay goes out from the relay-registered
/// sender, or Apple drops it.
public struct EmailJobHandler: JobHandler {
    public let type = JobType.email
    let channel: any EmailChannel
    let sealer: Sealer
    let settings: EmailSettings
    let providerRatePolicy: RatePolicy?

    public init(channel: any EmailChannel, keys: HeraldKeys, settings: EmailSettings, providerRate: RatePolicy? = nil) {
        self.channel = channel
        self.sealer = Sealer(key: keys.sealing)
        self.settings = settings
        self.providerRatePolicy = providerRate
    }

    public func destination(of job: Job) -> String {
        guard case .email(let message) = job.payload else { return "" }
        return message.to
    }

    public func region(of job: Job) -> String { "" }

    public var providerName: String { channel.name }

    public func spacingChecks(for job: Job) -> [LimitCheck] { [] }

    public var providers: [ProviderSlot] { [ProviderSlot(name: channel.name, rate: providerRatePolicy)] }

    public func deliver(_ job: Job, now: Date) async -> DeliveryReport {
        switch render(job, now: now) {
        case .success(let message):
            return DeliveryReport(await channel.deliver(message, envelopeFrom: sender(for: message.to).address))
        case .failure(let failure):
            return DeliveryReport(.permanent(reason: failure.description))
        }
    }

    /// The From mailbox for a recipient.
    func sender(for recipient: String) -> Mailbox {
        if let relay = settings.privateRelayFrom, EmailAddress(recipient)?.isPrivateRelay == true { return relay }
        return settings.from
    }

    /// Why a job could not become a message (dead-lettered with this reason).
    public struct RenderFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The message a job becomes: sealed link opened, the locale's templates rendered, MIME built.
    public func render(_ job: Job, now: Date) -> Result<MIMEMessage, RenderFailure> {
        guard case .email(let email) = job.payload else { return .failure(RenderFailure(description: "not an email job")) }
        let name = email.template.rawValue
        guard let subject = settings.templates.template(name + ".subject", locale: job.locale)?.template,
            let text = settings.templates.template(name + ".txt", locale: job.locale)?.template,
            let html = settings.templates.template(name + ".html", locale: job.locale)?.template
        else { return .failure(RenderFailure(description: "no email template '\(name)'")) }
        guard let sealed = email.params["linkSealed"] else { return .failure(RenderFailure(description: "params.linkSealed is missing")) }
        let link: String
        do {
            link = try sealer.open(sealed, jobID: job.id, destination: email.to)
        } catch {
            return .failure(
                RenderFailure(description: "params.linkSealed does not open with this codes.sealingKey (or was sealed for another job or address)"))
        }
        var values = ["link": link, "app": email.params["app"] ?? job.project, "email": email.to]
        // An email change names its other address: the old one to the new address, the new one to the old.
        for name in ["oldEmail", "newEmail"] { values[name] = email.params[name] }
        let from = sender(for: email.to)
        return .success(
            MIMEMessage(
                from: from, replyTo: settings.replyTo, to: email.to, subject: subject.render(values), text: text.render(values),
                html: html.render(values, escaping: .html), date: now,
                messageID: MIMEMessage.newMessageID(domain: from.domain), boundary: MIMEMessage.newBoundary()))
    }
}
