import Crypto
import Foundation
import HeraldCore

/// The status page's login: an admin token (from `admin.tokens`) typed once into a form buys a cookie
/// valid for `lifetime`, signed under a key derived from `codes.sealingKey`, so the token itself never
/// sits in the browser. The cookie names the token it came from by a fingerprint: removing that token from
/// the configuration ends its sessions. Every form carries a CSRF token derived from the cookie (and the
/// cookie is SameSite=Strict and HttpOnly besides). Pure: the clock is passed in.
struct AdminSession: Sendable {
    let key: SymmetricKey
    let tokens: [String]
    let lifetime: TimeInterval

    static let cookieName = "herald_admin"

    init(key: SymmetricKey, tokens: [String], lifetime: TimeInterval = 8 * 3600) {
        self.key = key
        self.tokens = tokens
        self.lifetime = lifetime
    }

    /// A cookie value for a session opened with `token` at `now` (nil when the token is not configured).
    func open(token: String, now: Date) -> String? {
        guard AdminAuthorization(tokens: tokens).isAdmin(authorization: "Bearer " + token) else { return nil }
        let expiry = String(Int64(now.timeIntervalSince1970 + lifetime))
        let fingerprint = Self.fingerprint(token)
        return "\(expiry).\(fingerprint).\(mac("session|\(expiry)|\(fingerprint)"))"
    }

    /// True for an unexpired cookie this key signed for a token still configured.
    func isValid(_ cookie: String?, now: Date) -> Bool {
        guard let cookie else { return false }
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let expiry = Int64(parts[0]), Double(expiry) > now.timeIntervalSince1970,
            tokens.contains(where: { Self.fingerprint($0) == parts[1] })
        else { return false }
        return constantTimeEquals(Array(mac("session|\(parts[0])|\(parts[1])").utf8), Array(parts[2].utf8))
    }

    /// The CSRF token forms of this session carry.
    func csrf(for cookie: String) -> String { mac("csrf|" + cookie) }

    func isValidCSRF(_ presented: String?, cookie: String) -> Bool {
        guard let presented else { return false }
        return constantTimeEquals(Array(csrf(for: cookie).utf8), Array(presented.utf8))
    }

    private func mac(_ text: String) -> String { SHA256Hex.hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)) }

    static func fingerprint(_ token: String) -> String { String(SHA256Hex.digest(token).prefix(16)) }

    /// The session cookie among a request's `Cookie` headers.
    static func cookie(in header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            let trimmed = pair.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix(cookieName + "=") { return String(trimmed.dropFirst(cookieName.count + 1)) }
        }
        return nil
    }
}
