import HeraldChannels
import HeraldCore

extension EmailSettings {
    /// `email`; `console` needs `devMode`.
    init(reader email: ConfigReader, devMode: Bool) throws {
        let smtp = try email.section("smtp")
        func mailbox(_ reader: ConfigReader, _ key: String, _ text: String?) throws -> Mailbox? {
            guard let text else { return nil }
            guard let box = Mailbox(parsing: text) else {
                throw reader.fail(key, "not a mailbox ('Name <address@domain>' or 'address@domain'; got '\(text)')")
            }
            return box
        }
        let provider = try email.choice("provider", default: Provider.smtp)
        if provider == .console, devMode == false {
            throw email.fail("provider", "console prints sign-in links to the terminal and needs devMode: true")
        }
        self.init(
            provider: provider,
            rate: try email.rate("rate", default: RatePolicy(limit: 20, period: .seconds(1)))!,
            from: try mailbox(email, "from", try email.string("from", default: "Herald <no-reply@localhost>"))!,
            replyTo: try mailbox(email, "replyTo", try email.optionalString("replyTo")),
            privateRelayFrom: try mailbox(email, "privateRelayFrom", try email.optionalString("privateRelayFrom")),
            templateDir: try email.string("templateDir", default: "config/templates/email"),
            templates: TemplateCatalog([:]),
            smtpURL: try smtp.string("url", default: "smtp://127.0.0.1:1025"),
            smtpUsername: try smtp.optionalString("username"),
            smtpPassword: try smtp.optionalString("password"),
            requireTLS: try smtp.bool("requireTLS", default: false),
            heloName: try smtp.string("heloName", default: "localhost"),
            timeout: try smtp.duration("timeout", default: .seconds(30), in: .seconds(1) ... .seconds(600)),
            caFile: try smtp.optionalString("caFile"))
        guard ["smtp://", "smtps://"].contains(where: smtpURL.hasPrefix) else {
            throw smtp.fail("url", "must be an smtp:// or smtps:// URL")
        }
        guard heloName.isEmpty == false, heloName.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else {
            throw smtp.fail("heloName", "must be a host name (letters, digits, '-', '.')")
        }
        if (smtpUsername == nil) != (smtpPassword == nil) {
            throw smtp.fail(smtpUsername == nil ? "username" : "password", "username and password go together")
        }
        try smtp.finish()
        try email.finish()
    }
}
