/// What a limit counts, and how a refusal reads to the client.
public enum LimitKind: String, Sendable, CaseIterable {
    /// Sends to one destination number.
    case number
    /// Sends from one client address (IPv6 by /64).
    case ip
    /// Sends of one project.
    case project
    /// Sends to one destination country.
    case country
    /// Sends to one number prefix.
    case prefix
    /// Code checks for one number, across sessions.
    case checks
    /// A provider's throughput, shared by every worker.
    case provider
    /// Spacing between SMS to one number, in workers.
    case spacing
    /// Silent pushes to one device token (Apple throttles background pushes).
    case device
    /// Sign-in emails to one address.
    case email
    /// Account lookups (`createAuthUri`) from one client address.
    case lookup
    /// Password changes of one user.
    case password
    /// Failed password sign-ins to one address.
    case passwordSignIn
    /// Failed password sign-ins from one client address.
    case passwordSignInIP
    /// Accounts created from one client address.
    case signUp
    /// Apple token revocations (`revokeToken`) of one user.
    case revocation
    /// Apple token revocations from one client address.
    case revocationIP
    /// Status-page logins from one client address.
    case adminLogin

    /// Identity Toolkit answers per-user limits with TOO_MANY_ATTEMPTS_TRY_LATER and shared quotas
    /// with QUOTA_EXCEEDED; SDKs show them differently.
    public var refusal: HeraldError.Code {
        switch self {
        case .number, .ip, .checks, .spacing, .device, .email, .lookup, .password, .passwordSignIn, .passwordSignInIP, .signUp, .revocation,
            .revocationIP, .adminLogin:
            .tooManyAttempts
        case .project, .country, .prefix, .provider: .quotaExceeded
        }
    }

    /// The configuration key the policies come from (for logs and metrics).
    public var configurationKey: String {
        switch self {
        case .number: "limits.perNumber"
        case .ip: "limits.perIP"
        case .project: "limits.perProject"
        case .country: "limits.perCountry"
        case .prefix: "limits.perPrefix"
        case .checks: "limits.checksPerNumber"
        case .provider: "sms.http.rate"
        case .spacing: "sms.perNumberSpacing"
        case .device: "limits.pushesPerDevice"
        case .email: "limits.perEmail"
        case .lookup: "limits.lookupsPerIP"
        case .password: "limits.passwordChangesPerUser"
        case .passwordSignIn: "limits.passwordSignInsPerAccount"
        case .passwordSignInIP: "limits.passwordSignInsPerIP"
        case .signUp: "limits.signUpsPerIP"
        case .revocation: "limits.revocationsPerUser"
        case .revocationIP: "limits.revocationsPerIP"
        case .adminLogin: "limits.adminLoginsPerIP"
        }
    }
}

/// One limit to check: a key in the shared store and the policy that governs it.
///
/// Keys read `<kind>:<project>:<subject>|<policy>` (`number:demo:+15555550100|5/1h`), so support staff
/// can find every limit of a number with `herald-admin limits show number:+15555550100`.
public struct LimitCheck: Sendable, Equatable {
    public var kind: LimitKind
    public var key: String
    public var policy: RatePolicy

    public init(kind: LimitKind, scope: String, subject: String, policy: RatePolicy) {
        self.kind = kind
        // `kind:scope:subject|policy`, its bytes copied into one string allocated at its final size (six
        // per send; appending to a String went through its generic growth and append paths each time).
        let kindText = kind.rawValue
        let policyText = policy.description
        let count = kindText.utf8.count + scope.utf8.count + subject.utf8.count + policyText.utf8.count + 3
        self.key = String(unsafeUninitializedCapacity: count) { buffer in
            var end = buffer[...].initialize(fromContentsOf: kindText.utf8)
            buffer[end] = UInt8(ascii: ":")
            end = buffer[(end + 1)...].initialize(fromContentsOf: scope.utf8)
            buffer[end] = UInt8(ascii: ":")
            end = buffer[(end + 1)...].initialize(fromContentsOf: subject.utf8)
            buffer[end] = UInt8(ascii: "|")
            return buffer[(end + 1)...].initialize(fromContentsOf: policyText.utf8)
        }
        self.policy = policy
    }

    /// The limits of one send, in the order they are checked (cheapest abuse first).
    public static func forSend(
        project: String, phone: PhoneNumber, clientKey: String?, limits: LimitSettings
    ) -> [LimitCheck] {
        // Appended into one array sized up front (no array per kind): this runs on every send.
        var checks: [LimitCheck] = []
        checks.reserveCapacity(
            (clientKey == nil ? 0 : limits.perIP.count) + limits.perNumber.count + limits.perProject.count + limits.perCountry.count
                + limits.perPrefix.count)
        if let clientKey {
            for policy in limits.perIP { checks.append(LimitCheck(kind: .ip, scope: project, subject: clientKey, policy: policy)) }
        }
        for policy in limits.perNumber { checks.append(LimitCheck(kind: .number, scope: project, subject: phone.e164, policy: policy)) }
        for policy in limits.perProject { checks.append(LimitCheck(kind: .project, scope: project, subject: project, policy: policy)) }
        for policy in limits.perCountry { checks.append(LimitCheck(kind: .country, scope: project, subject: phone.region, policy: policy)) }
        if limits.perPrefix.isEmpty == false {
            let prefix = phone.prefix(digits: limits.prefixDigits)
            for policy in limits.perPrefix { checks.append(LimitCheck(kind: .prefix, scope: project, subject: prefix, policy: policy)) }
        }
        return checks
    }

    /// The limits of one `verifyClient` (a silent push).
    public static func forPush(project: String, deviceTokenHash: String, clientKey: String?, limits: LimitSettings) -> [LimitCheck] {
        var checks: [LimitCheck] = []
        if let clientKey { checks += limits.perIP.map { LimitCheck(kind: .ip, scope: project, subject: clientKey, policy: $0) } }
        checks += limits.pushesPerDevice.map { LimitCheck(kind: .device, scope: project, subject: deviceTokenHash, policy: $0) }
        return checks
    }

    /// The limits of one sign-in email: per client address, per recipient's mailbox
    /// (`EmailAddress.mailbox`), per project.
    public static func forEmail(project: String, email: String, clientKey: String?, limits: LimitSettings) -> [LimitCheck] {
        var checks: [LimitCheck] = []
        if let clientKey { checks += limits.perIP.map { LimitCheck(kind: .ip, scope: project, subject: clientKey, policy: $0) } }
        checks += limits.perEmail.map { LimitCheck(kind: .email, scope: project, subject: email, policy: $0) }
        checks += limits.perProject.map { LimitCheck(kind: .project, scope: project, subject: project, policy: $0) }
        return checks
    }

    /// The subject an operator's lookup names, as the limits key it: an address by its mailbox.
    public static func subject(_ typed: String, kind: String) -> String {
        kind == LimitKind.email.rawValue ? EmailAddress(typed)?.mailbox ?? typed : typed
    }

    /// The limits of one code check.
    public static func forCheck(project: String, phoneNumber: String, limits: LimitSettings) -> [LimitCheck] {
        limits.checksPerNumber.map { LimitCheck(kind: .checks, scope: project, subject: phoneNumber, policy: $0) }
    }

    /// Splits a stored key into its parts (`kind`, `project`, `subject`, `policy`).
    public static func parse(_ key: String) -> (kind: String, project: String, subject: String, policy: String)? {
        guard let bar = key.lastIndex(of: "|") else { return nil }
        let head = key[..<bar]
        let parts = head.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        return (String(parts[0]), String(parts[1]), String(parts[2]), String(key[key.index(after: bar)...]))
    }
}
