import Crypto
import Foundation

/// Random values from the system CSPRNG, encoded the ways the wire needs them.
public enum SecureRandom {
    /// `count` bytes from the system CSPRNG.
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// `count` random bytes as unpadded base64url text (opaque tokens, session ids).
    public static func base64URL(bytes count: Int) -> String {
        Data(bytes(count)).base64URLEncodedString()
    }

    /// `length` characters from `[A-Za-z0-9]`, without modulo bias (Firebase-shaped ids such as localId).
    public static func alphanumeric(_ length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }
}

extension Data {
    /// Unpadded base64url (RFC 4648 §5), as JWTs and opaque tokens use.
    public func base64URLEncodedString() -> String {
        base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url with or without padding; nil when the text is not base64url.
    public init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if base64.contains("=") == false {
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        }
        self.init(base64Encoded: base64)
    }
}
