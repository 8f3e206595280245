import Foundation
import HeraldCore
import Testing

@testable import HeraldAPI

/// The status page's session cookie, without a server: what it carries and which cookies it accepts.
@Suite("Admin session cookies")
struct AdminSessionTests {
    static let token = String(repeating: "t", count: 32)
    static let other = String(repeating: "u", count: 32)
    static let key = HeraldKeys(master: Data(repeating: 7, count: 32)).adminSessions
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a session names its token by an HMAC key id, keeps only the secret's hash, and expires after its lifetime")
    func opens() throws {
        let session = AdminSession(key: Self.key, tokens: [Self.token, Self.other], lifetime: 600)
        let opened = try #require(session.open(token: Self.token, now: Self.now, secret: Array(repeating: 1, count: 32)))
        let parts = opened.cookie.split(separator: ".").map(String.init)
        #expect(parts.count == 2 && parts[0] == opened.keyID && parts[1].utf8.count == 43)
        #expect(opened.keyID != String(SHA256Hex.digest(Self.token).prefix(16)), "not a hash prefix anyone can check offline")
        #expect(opened.hash == SHA256Hex.digest(parts[1]) && opened.cookie.contains(opened.hash) == false)
        #expect(opened.expiresAt == Self.now.addingTimeInterval(600))
        #expect(session.keyID(of: Self.other) != opened.keyID)
        // Another sealing key gives the same token another id.
        let elsewhere = AdminSession(key: HeraldKeys(master: Data(repeating: 8, count: 32)).adminSessions, tokens: [Self.token])
        #expect(elsewhere.keyID(of: Self.token) != opened.keyID)
        #expect(session.open(token: "not-configured-" + Self.token, now: Self.now) == nil)
        // Two sessions of one token never share a cookie.
        #expect(session.open(token: Self.token, now: Self.now)?.cookie != session.open(token: Self.token, now: Self.now)?.cookie)
    }

    @Test("a presented cookie is read only when well formed and its token still configured")
    func presented() throws {
        let session = AdminSession(key: Self.key, tokens: [Self.token])
        let opened = try #require(session.open(token: Self.token, now: Self.now))
        #expect(session.presented(opened.cookie) == AdminSession.Presented(cookie: opened.cookie, hash: opened.hash, keyID: opened.keyID))
        #expect(AdminSession(key: Self.key, tokens: [Self.other]).presented(opened.cookie) == nil, "its token was removed")
        for malformed in ["", ".", opened.keyID, opened.cookie + ".x", opened.cookie + "x", "x" + opened.cookie, opened.keyID + "."] {
            #expect(session.presented(malformed) == nil, "\(malformed)")
        }
        #expect(session.isValidCSRF(session.csrf(for: opened.cookie), cookie: opened.cookie))
        #expect(session.isValidCSRF(session.csrf(for: opened.cookie), cookie: session.open(token: Self.token, now: Self.now)!.cookie) == false)
    }
}
