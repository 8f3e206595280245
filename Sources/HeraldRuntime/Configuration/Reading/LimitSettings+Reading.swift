import HeraldCore

extension LimitSettings {
    /// `limits`.
    init(reader limits: ConfigReader) throws {
        self.init(
            perNumber: try limits.rateList(
                "perNumber", default: [RatePolicy(limit: 5, period: .seconds(3600)), RatePolicy(limit: 10, period: .seconds(86_400))]),
            perIP: try limits.rateList(
                "perIP", default: [RatePolicy(limit: 50, period: .seconds(60)), RatePolicy(limit: 500, period: .seconds(3600))]),
            perProject: try limits.rateList("perProject", default: [RatePolicy(limit: 1000, period: .seconds(60))]),
            perCountry: try limits.rateList("perCountry", default: []),
            perPrefix: try limits.rateList("perPrefix", default: []),
            prefixDigits: try limits.int("prefixDigits", default: 6, in: 2...14),
            checksPerNumber: try limits.rateList("checksPerNumber", default: [RatePolicy(limit: 20, period: .seconds(3600))]),
            pushesPerDevice: try limits.rateList("pushesPerDevice", default: [RatePolicy(limit: 3, period: .seconds(3600))]),
            perEmail: try limits.rateList(
                "perEmail", default: [RatePolicy(limit: 5, period: .seconds(3600)), RatePolicy(limit: 20, period: .seconds(86_400))]),
            lookupsPerIP: try limits.rateList(
                "lookupsPerIP", default: [RatePolicy(limit: 30, period: .seconds(60)), RatePolicy(limit: 300, period: .seconds(3600))]),
            passwordChangesPerUser: try limits.rateList("passwordChangesPerUser", default: [RatePolicy(limit: 5, period: .seconds(3600))]),
            revocationsPerUser: try limits.rateList("revocationsPerUser", default: [RatePolicy(limit: 5, period: .seconds(3600))]),
            revocationsPerIP: try limits.rateList("revocationsPerIP", default: [RatePolicy(limit: 20, period: .seconds(3600))]),
            adminLoginsPerIP: try limits.rateList("adminLoginsPerIP", default: [RatePolicy(limit: 10, period: .seconds(900))]),
            pumping: try PrefixVelocity.Settings(reader: try limits.section("pumping")),
            leasing: try LimitLeases.Settings(reader: try limits.section("leasing")))
        passwordSignInsPerAccount = try limits.rateList("passwordSignInsPerAccount", default: [RatePolicy(limit: 10, period: .seconds(900))])
        passwordSignInsPerIP = try limits.rateList("passwordSignInsPerIP", default: [RatePolicy(limit: 100, period: .seconds(900))])
        signUpsPerIP = try limits.rateList("signUpsPerIP", default: [RatePolicy(limit: 100, period: .seconds(3600))])
        try limits.finish()
    }
}

extension LimitLeases.Settings {
    /// `limits.leasing`.
    init(reader section: ConfigReader) throws {
        self.init(
            above: try section.int("above", default: 50, in: 0...1_000_000),
            lifetime: try section.duration("lifetime", default: .seconds(1), in: .milliseconds(10) ... .seconds(10)))
        try section.finish()
    }
}

extension PrefixVelocity.Settings {
    /// `limits.pumping`.
    init(reader section: ConfigReader) throws {
        self.init(
            enabled: try section.bool("enabled", default: true),
            window: try section.duration("window", default: .seconds(600), in: .seconds(10) ... .seconds(86_400)),
            multiple: try section.double("multiple", default: 10, in: 1...10_000),
            minimumSends: try section.int("minimumSends", default: 50, in: 1...1_000_000),
            blockFor: try section.duration("blockFor", default: .seconds(12 * 3600), in: .seconds(1) ... .seconds(30 * 86_400)))
        try section.finish()
    }
}
