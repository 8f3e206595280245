/// `projects[].passwordPolicy`, in the shape of Firebase's `GET /v2/passwordPolicy` answer: what a new
/// password (sign-up, change, reset) must contain. With `enforcementState` OFF only Firebase's fixed floor
/// applies (6 characters, WEAK_PASSWORD); with ENFORCE every option is checked and the answer names each
/// requirement a password misses, in Firebase's words.
///
/// Lengths count Unicode scalars (what a user types as characters). Whatever the policy says, a password
/// over `byteCap` UTF-8 bytes is refused before it is hashed: each hash is a fixed CPU cost, but the
/// bytes fed to it are not, and Firebase itself caps passwords at 4,096.
public struct PasswordPolicy: Sendable, Equatable {
    public enum Enforcement: String, Sendable, CaseIterable {
        case enforce = "ENFORCE"
        case off = "OFF"
    }

    public var enforcement: Enforcement
    public var minLength: Int
    /// nil: no maximum but `byteCap`.
    public var maxLength: Int?
    public var requiresLowercase: Bool
    public var requiresUppercase: Bool
    public var requiresNumeric: Bool
    public var requiresNonAlphanumeric: Bool
    /// Refuse a sign-in whose (correct) password no longer meets an enforced policy, so the user resets it.
    public var forceUpgradeOnSignin: Bool

    /// Firebase's floor, enforced or not.
    public static let firebaseMinimum = 6
    /// The longest password hashed, in UTF-8 bytes.
    public static let byteCap = 4096
    /// The characters that count as non-alphanumeric, the list Firebase publishes with its policy.
    public static let allowedNonAlphanumericCharacters: [String] = [
        "^", "$", "*", ".", "[", "]", "{", "}", "(", ")", "?", "\"", "!", "@", "#", "%", "&", "/", "\\", ",", ">", "<", "'", ":", ";", "|",
        "_", "~", "`", "=", "+", "-",
    ]

    public init(
        enforcement: Enforcement = .off, minLength: Int = PasswordPolicy.firebaseMinimum, maxLength: Int? = nil, requiresLowercase: Bool = false,
        requiresUppercase: Bool = false, requiresNumeric: Bool = false, requiresNonAlphanumeric: Bool = false, forceUpgradeOnSignin: Bool = false
    ) {
        self.enforcement = enforcement
        self.minLength = minLength
        self.maxLength = maxLength
        self.requiresLowercase = requiresLowercase
        self.requiresUppercase = requiresUppercase
        self.requiresNumeric = requiresNumeric
        self.requiresNonAlphanumeric = requiresNonAlphanumeric
        self.forceUpgradeOnSignin = forceUpgradeOnSignin
    }

    /// What a refused password gets back.
    public enum Refusal: Sendable, Equatable {
        /// WEAK_PASSWORD : Password should be at least 6 characters (the floor, policy off).
        case weak
        /// PASSWORD_DOES_NOT_MEET_REQUIREMENTS : Missing password requirements: [<each>]
        case missing([String])

        public var error: HeraldError {
            switch self {
            case .weak: HeraldError(.weakPassword, "Password should be at least \(PasswordPolicy.firebaseMinimum) characters")
            case .missing(let requirements):
                HeraldError(.passwordDoesNotMeetRequirements, "Missing password requirements: [\(requirements.joined(separator: ", "))]")
            }
        }
    }

    /// nil when `password` may be set.
    public func check(_ password: String) -> Refusal? {
        if password.utf8.count > Self.byteCap { return .missing(["Password may contain at most \(Self.byteCap) bytes"]) }
        let length = password.unicodeScalars.count
        guard enforcement == .enforce else { return length < Self.firebaseMinimum ? .weak : nil }
        let missing = missingRequirements(password, length: length)
        return missing.isEmpty ? nil : .missing(missing)
    }

    /// For `forceUpgradeOnSignin`: the requirements a password that signed in misses (empty when none,
    /// or when the policy is not enforced).
    public func upgradeRequired(_ password: String) -> [String] {
        guard enforcement == .enforce, forceUpgradeOnSignin else { return [] }
        return missingRequirements(password, length: password.unicodeScalars.count)
    }

    private func missingRequirements(_ password: String, length: Int) -> [String] {
        var missing: [String] = []
        if length < minLength { missing.append("Password must contain at least \(minLength) characters") }
        if let maxLength, length > maxLength { missing.append("Password may contain at most \(maxLength) characters") }
        let scalars = password.unicodeScalars
        if requiresLowercase, scalars.contains(where: { $0.properties.isLowercase }) == false {
            missing.append("Password must contain a lower case character")
        }
        if requiresUppercase, scalars.contains(where: { $0.properties.isUppercase }) == false {
            missing.append("Password must contain an upper case character")
        }
        if requiresNumeric, scalars.contains(where: { $0.properties.numericType != nil }) == false {
            missing.append("Password must contain a numeric character")
        }
        if requiresNonAlphanumeric, scalars.contains(where: { Self.allowedNonAlphanumericCharacters.contains(String($0)) }) == false {
            missing.append("Password must contain a non-alphanumeric character")
        }
        return missing
    }
}
