import Foundation
import HeraldCore

/// A user in Identity Toolkit's `GetAccountInfoResponse` shape, which the SDKs and firebase-admin's
/// `UserRecord` read: times as millisecond strings, `validSince` in seconds, one `providerUserInfo`
/// entry per linked provider. Password hashes are never returned.
struct UserInfo: Encodable, Sendable {
    struct ProviderInfo: Encodable, Sendable {
        var providerId: String
        var rawId: String
        var email: String?
        var phoneNumber: String?
        var federatedId: String?
        var displayName: String?
    }

    var localId: String
    var email: String?
    var emailVerified: Bool
    var displayName: String?
    var phoneNumber: String?
    var passwordUpdatedAt: Double?
    var providerUserInfo: [ProviderInfo]
    var createdAt: String
    var lastLoginAt: String
    var validSince: String?
    var disabled: Bool
    var emailLinkSignin: Bool?
    var mfaInfo: [SignInCompletion.MFAInfo]?
    /// The custom claims as their JSON text, as firebase-admin's `UserRecord.custom_claims` reads them.
    var customAttributes: String?

    init(_ user: UserAccount) {
        localId = user.localID
        email = user.email
        emailVerified = user.emailVerified
        displayName = user.displayName
        phoneNumber = user.phoneNumber
        var providers: [ProviderInfo] = []
        // Email-link users show as the password provider in Firebase too (with no hash).
        if let email = user.email, user.passwordHash != nil || user.emailLinkSignin {
            providers.append(ProviderInfo(providerId: "password", rawId: email, email: email, federatedId: email, displayName: user.displayName))
        }
        if let phone = user.phoneNumber {
            providers.append(ProviderInfo(providerId: "phone", rawId: phone, phoneNumber: phone))
        }
        for identity in user.identities {
            providers.append(
                ProviderInfo(
                    providerId: identity.providerID, rawId: identity.federatedID, email: identity.email, federatedId: identity.federatedID,
                    displayName: identity.displayName))
        }
        providerUserInfo = providers
        createdAt = String(user.createdAt.millisecondsSince1970)
        lastLoginAt = String(user.lastLoginAt.millisecondsSince1970)
        validSince = user.validSince.map { String(Int64($0.timeIntervalSince1970)) }
        disabled = user.disabled
        emailLinkSignin = user.emailLinkSignin ? true : nil
        mfaInfo = user.mfaEnrollments.isEmpty ? nil : user.mfaEnrollments.map { SignInCompletion.MFAInfo($0, masked: false) }
        customAttributes = user.customAttributes
    }
}
