/// `push`: how herald-push-worker delivers (`apns`, `console` in devMode, or `none` for no silent
/// pushes), the provider key and where to reach APNs.
public struct PushSettings: Sendable {
    public var provider: Provider

    /// Where silent pushes go.
    public enum Provider: String, Sendable, CaseIterable {
        /// Apple's push service (`push.apns`).
        case apns
        /// The terminal, for development (devMode only).
        case console
        /// No silent pushes: `verifyClient` answers INVALID_APP_CREDENTIAL (iOS apps then use
        /// reCAPTCHA), no push job is queued, and no herald-push-worker is expected.
        case none
    }
    public var apnsURL: String?
    public var caFile: String?
    public var keyId: String?
    public var teamId: String?
    public var keyFile: String?
    public var timeout: Duration

    public init(provider: Provider, apnsURL: String?, caFile: String?, keyId: String?, teamId: String?, keyFile: String?, timeout: Duration) {
        self.provider = provider
        self.apnsURL = apnsURL
        self.caFile = caFile
        self.keyId = keyId
        self.teamId = teamId
        self.keyFile = keyFile
        self.timeout = timeout
    }
}
