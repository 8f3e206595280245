/// `limits`: GCRA policies per key kind, shared by every API process through the store.
public struct LimitSettings: Sendable {
    public var perNumber: [RatePolicy]
    public var perIP: [RatePolicy]
    public var perProject: [RatePolicy]
    public var perCountry: [RatePolicy]
    public var perPrefix: [RatePolicy]
    /// Digits after `+` (calling code included) that make a prefix, for `perPrefix` and pumping.
    public var prefixDigits: Int
    public var checksPerNumber: [RatePolicy]
    /// Silent pushes (`verifyClient`) per device token.
    public var pushesPerDevice: [RatePolicy]
    /// Sign-in emails to one address.
    public var perEmail: [RatePolicy]
    /// `createAuthUri` (account lookups by email) per client address.
    public var lookupsPerIP: [RatePolicy]
    /// Password changes per user (each costs 0.2 s of PBKDF2).
    public var passwordChangesPerUser: [RatePolicy]
    /// Apple token revocations (`revokeToken`) per user and per client address: each is a call
    /// to Apple under the project's key.
    public var revocationsPerUser: [RatePolicy]
    public var revocationsPerIP: [RatePolicy]
    /// Failed password sign-ins per address (known or not) and per client address; a sign-in that
    /// succeeds gives its slot back.
    public var passwordSignInsPerAccount: [RatePolicy] = []
    public var passwordSignInsPerIP: [RatePolicy] = []
    /// Accounts created by `signUp` (password or anonymous) per client address.
    public var signUpsPerIP: [RatePolicy] = []
    /// Status-page logins (`POST /admin/login`) per client address, right token or wrong.
    public var adminLoginsPerIP: [RatePolicy]
    /// `limits.pumping`: per-prefix velocity blocks.
    public var pumping: PrefixVelocity.Settings
    /// `limits.leasing`: slices of busy shared limits held in each herald-api process.
    public var leasing: LimitLeases.Settings

    public init(
        perNumber: [RatePolicy], perIP: [RatePolicy], perProject: [RatePolicy], perCountry: [RatePolicy], perPrefix: [RatePolicy],
        prefixDigits: Int, checksPerNumber: [RatePolicy], pushesPerDevice: [RatePolicy] = [], perEmail: [RatePolicy] = [],
        lookupsPerIP: [RatePolicy] = [], passwordChangesPerUser: [RatePolicy] = [], revocationsPerUser: [RatePolicy] = [],
        revocationsPerIP: [RatePolicy] = [], adminLoginsPerIP: [RatePolicy] = [], pumping: PrefixVelocity.Settings,
        leasing: LimitLeases.Settings = .off
    ) {
        self.adminLoginsPerIP = adminLoginsPerIP
        self.revocationsPerUser = revocationsPerUser
        self.revocationsPerIP = revocationsPerIP
        self.leasing = leasing
        self.perEmail = perEmail
        self.lookupsPerIP = lookupsPerIP
        self.passwordChangesPerUser = passwordChangesPerUser
        self.perNumber = perNumber
        self.perIP = perIP
        self.perProject = perProject
        self.perCountry = perCountry
        self.perPrefix = perPrefix
        self.prefixDigits = prefixDigits
        self.checksPerNumber = checksPerNumber
        self.pushesPerDevice = pushesPerDevice
        self.pumping = pumping
    }
}
