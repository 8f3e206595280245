/// A refusal the client must understand, with the stable Identity Toolkit code its SDK switches on.
///
/// Clients parse the text before the first ` : ` of `message`; the detail after it is for humans.
/// Details never contain codes, secrets or tokens.
public struct HeraldError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code with its wire form.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The identifier clients switch on (`INVALID_CODE`).
        public let name: String
        /// HTTP status of the response.
        public let httpStatus: Int
        /// `errors[0].reason` in the envelope.
        public let reason: String
        /// google.rpc status text (`PERMISSION_DENIED`); nil for the plain 400s Identity Toolkit sends.
        public let status: String?
        /// The whole message when Identity Toolkit uses prose instead of a code (API-key errors).
        public let fixedMessage: String?

        init(_ name: String, http: Int = 400, reason: String = "invalid", status: String? = nil, fixedMessage: String? = nil) {
            self.name = name
            self.httpStatus = http
            self.reason = reason
            self.status = status
            self.fixedMessage = fixedMessage
        }

        public var description: String { name }

        public static func == (lhs: Code, rhs: Code) -> Bool { lhs.name == rhs.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        // Transport and envelope.
        public static let missingAPIKey = Code(
            "MISSING_API_KEY", http: 403, reason: "forbidden", status: "PERMISSION_DENIED",
            fixedMessage: "The request is missing a valid API key.")
        public static let invalidAPIKey = Code(
            "API_KEY_INVALID", http: 400, reason: "keyInvalid", status: "INVALID_ARGUMENT",
            fixedMessage: "API key not valid. Please pass a valid API key.")
        public static let invalidArgument = Code("INVALID_ARGUMENT", status: "INVALID_ARGUMENT")
        /// A body over the limit (64 KiB); 413, as Google's front ends answer.
        public static let requestTooLarge = Code("REQUEST_TOO_LARGE", http: 413, reason: "badRequest", status: "INVALID_ARGUMENT")
        public static let invalidJSON = Code(
            "INVALID_JSON", status: "INVALID_ARGUMENT", fixedMessage: "Invalid JSON payload received.")
        public static let invalidTemporaryProof = Code("INVALID_TEMPORARY_PROOF")
        /// No or a wrong admin token on the admin API, a receipt without a valid signature.
        public static let unauthenticated = Code("UNAUTHENTICATED", http: 401, reason: "authError", status: "UNAUTHENTICATED")
        public static let notFound = Code("NOT_FOUND", http: 404, reason: "notFound", status: "NOT_FOUND", fixedMessage: "Not Found")
        public static let notImplemented = Code("NOT_IMPLEMENTED", http: 501, reason: "unimplemented", status: "NOT_IMPLEMENTED")
        public static let unavailable = Code("UNAVAILABLE", http: 503, reason: "backendError", status: "UNAVAILABLE")
        public static let internalError = Code("INTERNAL_ERROR", http: 500, reason: "backendError", status: "INTERNAL")

        // Phone sign-in.
        public static let invalidPhoneNumber = Code("INVALID_PHONE_NUMBER")
        public static let missingPhoneNumber = Code("MISSING_PHONE_NUMBER")
        public static let operationNotAllowed = Code("OPERATION_NOT_ALLOWED")
        public static let missingSessionInfo = Code("MISSING_SESSION_INFO")
        public static let missingCode = Code("MISSING_CODE")
        public static let invalidSessionInfo = Code("INVALID_SESSION_INFO")
        public static let invalidCode = Code("INVALID_CODE")
        public static let sessionExpired = Code("SESSION_EXPIRED")
        public static let tooManyAttempts = Code("TOO_MANY_ATTEMPTS_TRY_LATER")
        public static let quotaExceeded = Code("QUOTA_EXCEEDED")
        public static let unsupportedTenantOperation = Code("UNSUPPORTED_TENANT_OPERATION")

        // App verification.
        public static let missingAppCredential = Code("MISSING_APP_CREDENTIAL")
        public static let invalidAppCredential = Code("INVALID_APP_CREDENTIAL")
        public static let captchaCheckFailed = Code("CAPTCHA_CHECK_FAILED")
        public static let missingIOSAppToken = Code("MISSING_IOS_APP_TOKEN")
        public static let missingIOSBundleID = Code("MISSING_IOS_BUNDLE_ID")

        // Tokens and accounts.
        public static let missingGrantType = Code("MISSING_GRANT_TYPE")
        public static let invalidGrantType = Code("INVALID_GRANT_TYPE")
        public static let missingRefreshToken = Code("MISSING_REFRESH_TOKEN")
        public static let invalidRefreshToken = Code("INVALID_REFRESH_TOKEN")
        public static let tokenExpired = Code("TOKEN_EXPIRED")
        public static let userDisabled = Code("USER_DISABLED")
        public static let userNotFound = Code("USER_NOT_FOUND")
        public static let invalidIDToken = Code("INVALID_ID_TOKEN")
        public static let missingIDToken = Code("MISSING_ID_TOKEN")
        public static let missingLocalID = Code("MISSING_LOCAL_ID")
        public static let duplicateLocalID = Code("DUPLICATE_LOCAL_ID")
        public static let emailExists = Code("EMAIL_EXISTS")
        public static let phoneNumberExists = Code("PHONE_NUMBER_EXISTS")
        public static let weakPassword = Code("WEAK_PASSWORD")
        public static let passwordDoesNotMeetRequirements = Code("PASSWORD_DOES_NOT_MEET_REQUIREMENTS")
        public static let missingPassword = Code("MISSING_PASSWORD")
        public static let missingNewPassword = Code("MISSING_NEW_PASSWORD")
        public static let emailNotFound = Code("EMAIL_NOT_FOUND")
        public static let invalidPassword = Code("INVALID_PASSWORD")
        /// A wrong password or an unknown address, told apart by neither (enumeration protection).
        public static let invalidLoginCredentials = Code("INVALID_LOGIN_CREDENTIALS")
        public static let passwordLoginDisabled = Code("PASSWORD_LOGIN_DISABLED")
        /// Anonymous sign-up on a project that does not allow it.
        public static let adminOnlyOperation = Code("ADMIN_ONLY_OPERATION")
        public static let unexpectedParameter = Code("UNEXPECTED_PARAMETER")
        public static let missingUserAccount = Code("MISSING_USER_ACCOUNT")
        public static let missingNewEmail = Code("MISSING_NEW_EMAIL")
        public static let invalidRequestType = Code("INVALID_REQ_TYPE")
        public static let insufficientPermission = Code(
            "INSUFFICIENT_PERMISSION", http: 403, reason: "forbidden", status: "PERMISSION_DENIED")
        public static let missingIdentifier = Code("MISSING_IDENTIFIER")
        public static let credentialTooOld = Code("CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
        public static let invalidClaims = Code("INVALID_CLAIMS")
        public static let claimsTooLarge = Code("CLAIMS_TOO_LARGE")
        public static let forbiddenClaim = Code("FORBIDDEN_CLAIM")
        public static let invalidIdentifier = Code("INVALID_IDENTIFIER")

        // Email links.
        public static let missingRequestType = Code("MISSING_REQ_TYPE")
        public static let missingEmail = Code("MISSING_EMAIL")
        public static let invalidEmail = Code("INVALID_EMAIL")
        public static let missingContinueURI = Code("MISSING_CONTINUE_URI")
        public static let invalidContinueURI = Code("INVALID_CONTINUE_URI")
        public static let unauthorizedDomain = Code("UNAUTHORIZED_DOMAIN")
        public static let missingOobCode = Code("MISSING_OOB_CODE")
        public static let invalidOobCode = Code("INVALID_OOB_CODE")
        public static let expiredOobCode = Code("EXPIRED_OOB_CODE")

        // Identity providers (Sign in with Apple).
        public static let missingRequestURI = Code("MISSING_REQUEST_URI")
        public static let invalidRequestURI = Code("INVALID_REQUEST_URI")
        public static let invalidCredentialOrProviderID = Code("INVALID_CREDENTIAL_OR_PROVIDER_ID")
        public static let invalidIdPResponse = Code("INVALID_IDP_RESPONSE")
        public static let missingOrInvalidNonce = Code("MISSING_OR_INVALID_NONCE")
        public static let federatedUserIDAlreadyLinked = Code("FEDERATED_USER_ID_ALREADY_LINKED")
        public static let providerAlreadyLinked = Code("PROVIDER_ALREADY_LINKED")
        public static let invalidPendingToken = Code("INVALID_PENDING_TOKEN")
        public static let invalidProviderID = Code("INVALID_PROVIDER_ID")
        public static let missingToken = Code("MISSING_TOKEN")

        // Second factors.
        public static let unsupportedFirstFactor = Code("UNSUPPORTED_FIRST_FACTOR")
        public static let unverifiedEmail = Code("UNVERIFIED_EMAIL")
        public static let secondFactorExists = Code("SECOND_FACTOR_EXISTS")
        public static let secondFactorLimitExceeded = Code("SECOND_FACTOR_LIMIT_EXCEEDED")
        public static let missingMFAPendingCredential = Code("MISSING_MFA_PENDING_CREDENTIAL")
        public static let invalidMFAPendingCredential = Code("INVALID_MFA_PENDING_CREDENTIAL")
        public static let missingMFAEnrollmentID = Code("MISSING_MFA_ENROLLMENT_ID")
        public static let mfaEnrollmentNotFound = Code("MFA_ENROLLMENT_NOT_FOUND")
        public static let missingCredential = Code("MISSING_CREDENTIAL")
        public static let invalidProjectID = Code("INVALID_PROJECT_ID")
    }

    public let code: Code
    /// Human detail appended after ` : `.
    public let detail: String?
    /// For throttling refusals: when the client may try again (sent as `Retry-After`).
    public let retryAfter: Duration?

    public init(_ code: Code, _ detail: String? = nil, retryAfter: Duration? = nil) {
        self.code = code
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// The envelope's `error.message`: `CODE` or `CODE : detail`, or Identity Toolkit's prose.
    public var message: String {
        if let fixed = code.fixedMessage { return fixed }
        return detail.map { "\(code.name) : \($0)" } ?? code.name
    }

    public var description: String { message }
}
