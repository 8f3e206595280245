import Crypto
import Foundation

/// One-time codes: drawn from the CSPRNG, stored only as a keyed hash, compared in constant time.
public enum OneTimeCode {
    /// `length` decimal digits, uniformly random; leading zeros are allowed.
    public static func generate(length: Int) -> String {
        String(decoding: SecureRandom.values(length, below: 10).map { UInt8(ascii: "0") + UInt8($0) }, as: UTF8.self)
    }

    /// HMAC-SHA256 of the code bound to its session, so equal codes in two sessions hash differently
    /// and a leaked table cannot be reversed without the key (`HeraldKeys.codeHasher`, its pads hashed
    /// once).
    public static func hash(_ code: String, session: String, hasher: KeyedHMAC) -> Data {
        Data(hasher.authenticationCode(for: message(code, session: session)))
    }

    /// True when `code` hashes to `storedHash`; the comparison takes the same time wherever they differ.
    public static func matches(_ code: String, session: String, storedHash: Data, key: SymmetricKey) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(storedHash, authenticating: message(code, session: session), using: key)
    }

    /// What is hashed: the session, a zero byte, the code.
    private static func message(_ code: String, session: String) -> [UInt8] {
        // Bytes appended into one array sized up front: `Data(session.utf8)` went through the generic
        // sequence path (a dynamic cast) on every send and every check.
        var message: [UInt8] = []
        message.reserveCapacity(session.utf8.count + 1 + code.utf8.count)
        message.append(contentsOf: session.utf8)
        message.append(0)
        message.append(contentsOf: code.utf8)
        return message
    }

    /// True when `text` is exactly `length` ASCII digits (test-number codes, submitted codes).
    public static func isWellFormed(_ text: String, length: Int) -> Bool {
        text.count == length && text.allSatisfy { $0.isASCII && $0.isNumber }
    }
}

/// Constant-time equality for secrets that are not HMACs (API tokens, hashes).
public func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
    return difference == 0
}
