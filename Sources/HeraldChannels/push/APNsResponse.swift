/// What an APNs answer means, by status and `reason` (Apple, "Handling notification responses from
/// APNs"). A rejection is an answer, not a transport failure, so it maps to a decision, never a throw.
public enum APNsVerdict: Sendable, Equatable {
    /// 200.
    case sent
    /// The device token is dead for this app and environment: drop the job and remember the token.
    case invalidToken(reason: String)
    /// The provider token was refused: renew it (if old enough) and try again later.
    case providerTokenRefused(reason: String)
    /// Try again later through the delay queues (throttling, APNs trouble).
    case retryable(reason: String)
    /// Our request or configuration is wrong; retrying cannot help.
    case permanent(reason: String)

    /// Maps a status and reason; unknown reasons follow their status class.
    public static func from(status: Int, reason: String?) -> APNsVerdict {
        let reason = reason ?? "HTTP \(status)"
        switch (status, reason) {
        case (200, _):
            return .sent
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            return .invalidToken(reason: reason)
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"):
            return .providerTokenRefused(reason: reason)
        case (400, "IdleTimeout"), (429, _), (500..<600, _):
            return .retryable(reason: reason)
        default:
            // 400 BadTopic/BadExpirationDate/…, 403 MissingProviderToken/BadEnvironmentKeyInToken/Forbidden/
            // UnrelatedKeyIdInToken, 404, 405, 413 PayloadTooLarge, and any other 4xx.
            return status >= 500 ? .retryable(reason: reason) : .permanent(reason: reason)
        }
    }
}
