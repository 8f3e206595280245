import Foundation
import HeraldCore

/// Development provider: prints each SMS to standard output instead of sending it. Configuration allows
/// it only with `devMode: true`, because the printed text contains the code. It writes to stdout
/// directly, never through the logging system, so log pipelines never receive codes.
public struct ConsoleChannel: SMSChannel {
    public let name: String
    /// Writes one line (the executable passes `LineOutput.standardOutput.write`).
    let print: @Sendable (String) -> Void

    public init(name: String = "console", print: @escaping @Sendable (String) -> Void) {
        self.name = name
        self.print = print
    }

    public func deliver(_ message: OutgoingSMS) async -> DeliveryReport {
        print("[console-sms] to \(message.to): \(message.body)")
        return DeliveryReport(.sent(reference: nil))
    }
}
