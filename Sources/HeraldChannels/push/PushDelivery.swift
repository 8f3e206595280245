import Foundation
import HeraldCore

/// Delivers one silent push (APNs, or the console in development).
public protocol PushDelivery: Sendable {
    var name: String { get }
    func send(_ message: PushMessage, secret: String, jobID: UUID, expiresAt: Date, now: Date) async -> APNsChannel.Result
}

extension APNsChannel: PushDelivery {
    public var name: String { "apns" }
}

/// Development provider: prints the push (receipt and secret) to standard output instead of sending it,
/// so the handshake can be finished by hand. Configuration allows it only with `devMode: true`.
public struct ConsolePushChannel: PushDelivery {
    public let name = "console"
    /// Writes one line (the executable passes `LineOutput.standardOutput.write`).
    let print: @Sendable (String) -> Void

    public init(print: @escaping @Sendable (String) -> Void) {
        self.print = print
    }

    public func send(_ message: PushMessage, secret: String, jobID: UUID, expiresAt: Date, now: Date) async -> APNsChannel.Result {
        let payload = String(decoding: APNsChannel.payload(receipt: message.payload["receipt"] ?? "", secret: secret), as: UTF8.self)
        print("[console-push] \(message.environment.rawValue) \(message.topic) device \(message.deviceToken.prefix(8))…: \(payload)")
        return APNsChannel.Result(outcome: .sent(reference: "console"), invalidToken: nil)
    }
}
