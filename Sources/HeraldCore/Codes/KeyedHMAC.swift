import Crypto
import Foundation

/// HMAC-SHA256 under one fixed key, with the key's inner and outer pads hashed once. A send computes
/// two MACs under fixed keys (the code's stored hash, the job's signature); `HMAC(key:)` pads, copies
/// and hashes the key each time (seven allocations and unspecialised generic code), while a copy of
/// the keyed state costs two.
public struct KeyedHMAC: Sendable {
    private let keyed: HMAC<SHA256>

    public init(key: SymmetricKey) {
        keyed = HMAC<SHA256>(key: key)
    }

    /// The MAC of `data`; the same bytes as `HMAC<SHA256>.authenticationCode(for:using:)`.
    public func authenticationCode(for data: some DataProtocol) -> HashedAuthenticationCode<SHA256> {
        // The copy shares the keyed digest states; the first update copies them (copy on write).
        var mac = keyed
        mac.update(data: data)
        return mac.finalize()
    }

    /// True when `mac` is the MAC of `data`, compared in constant time (swift-crypto's `==` between a
    /// MAC and bytes).
    public func isValid(_ mac: some DataProtocol, for data: some DataProtocol) -> Bool {
        authenticationCode(for: data) == mac
    }
}
