/// `tokens`: ID tokens.
public struct TokenSettings: Sendable {
    /// PEM RSA private key for RS256 ID tokens; nil = generate once into `state.dir`.
    public var signingKeyFile: String?
    public var idTokenTTL: Duration
    /// Sensitive changes (delete, email, password, phone, unlink, second factors) need a sign-in this
    /// recent (the ID token's `auth_time`), else CREDENTIAL_TOO_OLD_LOGIN_AGAIN.
    public var recentLogin: Duration

    public init(signingKeyFile: String?, idTokenTTL: Duration, recentLogin: Duration) {
        self.signingKeyFile = signingKeyFile
        self.idTokenTTL = idTokenTTL
        self.recentLogin = recentLogin
    }
}
