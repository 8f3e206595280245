import HeraldChannels

extension PushSettings {
    /// `push`; `console` needs `devMode`.
    init(reader push: ConfigReader, devMode: Bool) throws {
        let apns = try push.section("apns")
        let provider = try push.choice("provider", default: Provider.apns)
        if provider == .console, devMode == false {
            throw push.fail("provider", "console prints push secrets to the terminal and needs devMode: true")
        }
        self.init(
            provider: provider, apnsURL: try apns.optionalString("url"), caFile: try apns.optionalString("caFile"),
            keyId: try apns.optionalString("keyId"), teamId: try apns.optionalString("teamId"),
            keyFile: try apns.optionalString("keyFile"),
            timeout: try apns.duration("timeout", default: .seconds(10), in: .milliseconds(100) ... .seconds(120)))
        if let url = apnsURL, url.hasPrefix("https://") == false {
            throw apns.fail("url", "must be an https:// URL (APNs speaks HTTP/2 over TLS)")
        }
        let keyParts = [keyId, teamId, keyFile]
        if keyParts.contains(where: { $0 != nil }), keyParts.contains(where: { $0 == nil }) {
            throw apns.fail(keyId == nil ? "keyId" : teamId == nil ? "teamId" : "keyFile", "keyId, teamId and keyFile are set together")
        }
        try apns.finish()
        try push.finish()
    }
}
