import Foundation

/// `codes`: secrets for one-time codes.
public struct CodeSettings: Sendable {
    /// 32 bytes shared by the API and all workers; nil = generate once into `state.dir`.
    public var sealingKey: Data?

    public init(sealingKey: Data?) {
        self.sealingKey = sealingKey
    }
}
