import Crypto
import Foundation
import HeraldCore

/// The status page's login: an admin token (from `admin.tokens`) typed once into a form buys a session
/// valid for `lifetime`, so the token itself never sits in the browser.
///
/// The cookie is `<key id>.<secret>`: 32 random bytes, of which the store keeps only the SHA-256
/// (`AdminSessionStore`), so logging out deletes the session for every copy of the cookie on every
/// herald-api. The key id names the token the session came from by an HMAC under a key derived from
/// `codes.sealingKey`, not by a hash of the token, so a stolen cookie offers no offline check of a guessed
/// token; removing the token from the configuration ends its sessions. Every form carries a CSRF token
/// derived from the cookie (which is SameSite=Strict and HttpOnly besides). Pure: the clock and the
/// random bytes are passed in.
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

    /// A session to open: the cookie for the browser, what the store keeps.
    struct Opened: Sendable, Equatable {
        var cookie: String
        var hash: String
        var keyID: String
        var expiresAt: Date
    }

    /// A cookie the request presented: the session's key in the store and the token it claims.
    struct Presented: Sendable, Equatable {
        var cookie: String
        var hash: String
        var keyID: String
    }

    /// A session for `token` at `now`, with `secret` (32 random bytes) in its cookie; nil when the token
    /// is not configured.
    func open(token: String, now: Date, secret: [UInt8] = SecureRandom.bytes(32)) -> Opened? {
        guard AdminAuthorization(tokens: tokens).isAdmin(authorization: "Bearer " + token) else { return nil }
        let encoded = Data(secret).base64URLEncodedString()
        let keyID = keyID(of: token)
        return Opened(cookie: keyID + "." + encoded, hash: SHA256Hex.digest(encoded), keyID: keyID, expiresAt: now.addingTimeInterval(lifetime))
    }

    /// The cookie's session, when it is well formed and names a token still configured (the store says
    /// whether the session itself still exists).
    func presented(_ cookie: String?) -> Presented? {
        guard let cookie else { return nil }
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].utf8.count == 43, let keyID = parts.first.map(String.init),
            tokens.contains(where: { self.keyID(of: $0) == keyID })
        else { return nil }
        return Presented(cookie: cookie, hash: SHA256Hex.digest(String(parts[1])), keyID: keyID)
    }

    /// 16 hex digits of an HMAC of the token: which configured token a session belongs to.
    func keyID(of token: String) -> String { String(mac("admin-token|" + token).prefix(16)) }

    /// The CSRF token forms of this session carry.
    func csrf(for cookie: String) -> String { mac("csrf|" + cookie) }

    func isValidCSRF(_ presented: String?, cookie: String) -> Bool {
        guard let presented else { return false }
        return constantTimeEquals(Array(csrf(for: cookie).utf8), Array(presented.utf8))
    }

    private func mac(_ text: String) -> String { SHA256Hex.hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)) }

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
