import Foundation
import HeraldCore
import Logging

/// What proving control of an address does to the account that holds it unverified: someone put the
/// address there without proving it (an admin import, an attacker's `signUp`), so the proof wins, as in
/// Firebase. Every other way into the account (password, phone, second factors, a linked Apple account)
/// is removed and its sessions are revoked, so whoever set it up keeps nothing. An email link, an Apple
/// sign-in with Apple's verified address and a password reset are such proofs.
struct AddressProof: Sendable {
    let store: any AccountStore
    let completion: SignInCompletion
    let logger: Logger

    /// Marks `user`'s address verified; when it was not, first takes the account over as above. The
    /// caller stores the user (the factors and identities are removed here).
    func proved(_ user: inout UserAccount, by proof: String) async throws {
        defer { user.emailVerified = true }
        guard user.emailVerified == false else { return }
        let hadOtherCredentials =
            user.passwordHash != nil || user.phoneNumber != nil || user.mfaEnrollments.isEmpty == false || user.identities.isEmpty == false
        user.passwordHash = nil
        user.phoneNumber = nil
        user.phoneProven = false
        for enrollment in user.mfaEnrollments {
            _ = try await store.removeMFAEnrollment(projectID: user.projectID, localID: user.localID, enrollmentID: enrollment.enrollmentID)
        }
        user.mfaEnrollments = []
        for identity in user.identities {
            _ = try await store.unlinkIdentity(projectID: user.projectID, localID: user.localID, providerID: identity.providerID)
        }
        user.identities = []
        completion.revokeEarlierSessions(of: &user)
        logger.notice(
            "\(proof) proved an unverified address: other credentials unlinked, earlier sessions revoked",
            metadata: ["project": .string(user.projectID), "user": .string(user.localID), "unlinked": .stringConvertible(hadOtherCredentials)])
    }
}
