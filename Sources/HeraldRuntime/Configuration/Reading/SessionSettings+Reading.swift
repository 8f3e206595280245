import HeraldCore

extension CodeSettings {
    /// `codes`.
    init(reader codes: ConfigReader) throws {
        self.init(sealingKey: try codes.base64Key("sealingKey", byteCount: 32))
        try codes.finish()
    }
}

extension TokenSettings {
    /// `tokens`.
    init(reader tokens: ConfigReader) throws {
        self.init(
            signingKeyFile: try tokens.optionalString("signingKeyFile"),
            idTokenTTL: try tokens.duration("idTokenTTL", default: .seconds(3600), in: .seconds(60) ... .seconds(86_400)),
            recentLogin: try tokens.duration("recentLogin", default: .seconds(300), in: .seconds(10) ... .seconds(30 * 86_400)))
        try tokens.finish()
    }
}

extension LedgerSettings {
    /// `ledger`.
    init(reader ledger: ConfigReader) throws {
        // At least a day: the worker's ledger row is what stops a redelivered job from being sent twice.
        self.init(
            retention: try ledger.duration("retention", default: .seconds(30 * 86_400), in: .seconds(86_400) ... .seconds(3650 * 86_400)))
        try ledger.finish()
    }
}
