import Foundation
import HeraldChannels
import HeraldCore
import Logging

/// Push jobs: open the sealed secret and deliver the silent push; remember device tokens APNs declares
/// dead, so `verifyClient` answers INVALID_APP_CREDENTIAL for them (the SDK then uses reCAPTCHA).
public struct PushJobHandler: JobHandler {
    public let type = JobType.push
    let delivery: any PushDelivery
    let sealer: Sealer
    let tokens: any AppVerificationStore
    let clock: any WallClock
    let logger: Logger

    public init(delivery: any PushDelivery, keys: HeraldKeys, tokens: any AppVerificationStore, clock: any WallClock = SystemClock(), logger: Logger)
    {
        self.delivery = delivery
        self.sealer = Sealer(key: keys.sealing)
        self.tokens = tokens
        self.clock = clock
        self.logger = logger
    }

    /// Device tokens are kept as hashes, here too.
    public func destination(of job: Job) -> String {
        guard case .push(let message) = job.payload else { return "" }
        return SHA256Hex.digest(message.deviceToken)
    }

    public func region(of job: Job) -> String { "" }

    /// Per-device limits are applied when the push is requested; Apple's own throttling does the rest.
    public func spacingChecks(for job: Job) -> [LimitCheck] { [] }

    public var providerName: String { delivery.name }

    public func deliver(_ job: Job, now: Date) async -> DeliveryReport {
        guard case .push(let message) = job.payload else { return DeliveryReport(.permanent(reason: "not a push job")) }
        guard let sealed = message.payload["secretSealed"], let secret = try? sealer.open(sealed, jobID: job.id, destination: message.deviceToken)
        else {
            return DeliveryReport(.permanent(reason: "payload.secretSealed does not open with this codes.sealingKey (or was sealed for another job)"))
        }
        let result = await delivery.send(message, secret: secret, jobID: job.id, expiresAt: job.expiresAt, now: now)
        if let reason = result.invalidToken {
            do {
                try await tokens.markDeviceTokenInvalid(hash: destination(of: job), reason: reason, since: result.invalidSince ?? clock.now)
            } catch {
                logger.error("cannot record an invalid device token", metadata: ["error": .string("\(error)")])
            }
        }
        return DeliveryReport(result.outcome)
    }
}
