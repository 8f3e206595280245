import Foundation

/// Everything one real SMS send writes before its job is published, decided and written in one store
/// transaction: the prefix block check, the rate limits (all or nothing), the pumping count, the
/// verification session and the ledger row. One transaction instead of five calls is what lets
/// concurrent sends share one commit.
public struct SendAdmission: Sendable {
    /// The session to create; its `jobID` names the ledger row (type `sms`, to the session's number).
    public var session: VerificationSession
    /// The number prefix `limits.pumping` counts and blocks by.
    public var prefix: String
    /// The limits to spend, checked in this order (the first refusal is the one reported).
    public var limits: [LimitCheck]
    /// Pumping detection, nil when `limits.pumping` is off.
    public var pumping: PrefixVelocity.Settings?
    public var now: Date
    /// Refuse the send when the number is the first factor of a user with an SMS second factor (a
    /// sign-in code for such a number is UNSUPPORTED_FIRST_FACTOR). Checked inside the admission, so a
    /// send costs no store round trip of its own for it.
    public var refuseSecondFactorHolders: Bool

    public init(
        session: VerificationSession, prefix: String, limits: [LimitCheck], pumping: PrefixVelocity.Settings?, now: Date,
        refuseSecondFactorHolders: Bool = false
    ) {
        self.session = session
        self.prefix = prefix
        self.limits = limits
        self.refuseSecondFactorHolders = refuseSecondFactorHolders
        // Disabled pumping detection counts nothing: the same as none.
        self.pumping = pumping?.enabled == true ? pumping : nil
        self.now = now
    }

    /// What the store decided. Only `admitted` wrote the session and the ledger row.
    public enum Verdict: Sendable, Equatable {
        case admitted
        /// The prefix is blocked (pumping), until the block's end.
        case blocked(PrefixBlock)
        /// `limits[index]` refused; nothing was spent.
        case refused(index: Int, decision: GCRA.Decision)
        /// This send tripped pumping detection: the prefix is now blocked and the limits it spent were given back.
        case tripped
        /// `refuseSecondFactorHolders` and the number is a first factor of a user with an SMS second factor; nothing was spent.
        case secondFactorHolder
    }

    /// The limits as the store spends them: key and GCRA parameters.
    public var rateEntries: [(key: String, parameters: GCRA.Parameters)] {
        limits.map { (key: $0.key, parameters: GCRA.Parameters($0.policy)) }
    }
}

/// A send's store work in one transaction.
public protocol SendAdmissionStore: Sendable {
    func admitSend(_ send: SendAdmission) async throws -> SendAdmission.Verdict
}
