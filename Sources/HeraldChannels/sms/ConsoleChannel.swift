import Foundation
import HeraldCore

/// Development provider: prints each SMS to standard output instead of sending it. Configuration allows
/// it only with `devMode: true`, because the printed text contains the code. It writes to stdout
/// directly, never through the logging system, so log pipelines never receive codes.
public struct ConsoleChannel: DeliveryChannel {
    public let name = "console"
    let output: FileHandle

    public init(output: FileHandle = .standardOutput) {
        self.output = output
    }

    public func deliver(_ message: OutgoingSMS) async -> DeliveryOutcome {
        output.write(Data("[console-sms] to \(message.to): \(message.body)\n".utf8))
        return .sent(reference: "console")
    }
}
