import Foundation

/// A password hash as the store keeps it (`users.password_hash`): Herald's own, or one imported from
/// Firebase or another system, kept in the algorithm it came in until the user's first sign-in replaces it
/// with Herald's. One text form per algorithm, `<name>$<field>$…`, binary fields in standard base64:
///
/// - `pbkdf2-sha256$<rounds>$<salt>$<hash>` (Herald's own, and imported PBKDF2_SHA256; `pbkdf2-sha1` too)
/// - `firebase-scrypt$<memoryCost>$<rounds>$<saltSeparator>$<salt>$<hash>$<signerKey>`: Firebase's
///   modified scrypt, whose project-wide signer key travels with each hash so that imports from two
///   projects can live side by side
/// - `scrypt$<N>$<r>$<p>$<salt>$<hash>` (standard scrypt; the key length is the hash's)
/// - `hmac-<sha256|sha512|sha1|md5>$<ps|sp>$<key>$<salt>$<hash>` (`ps`: HMAC over password then salt)
/// - `bcrypt$<crypt text>` (`$2a$`, `$2b$`, `$2y$`)
/// - `unverifiable$<ALGORITHM>`: an imported hash Herald has no primitive for; the user signs in after a
///   password reset
///
/// Parsing only reads the form; `PasswordHash` (HeraldAPI) computes and compares.
public enum StoredPassword: Sendable, Equatable {
    case pbkdf2(digest: Digest, rounds: Int, salt: [UInt8], hash: [UInt8])
    case firebaseScrypt(FirebaseScrypt)
    case scrypt(n: Int, r: Int, p: Int, salt: [UInt8], hash: [UInt8])
    case hmac(digest: Digest, passwordFirst: Bool, key: [UInt8], salt: [UInt8], hash: [UInt8])
    case bcrypt(String)
    case unverifiable(algorithm: String)

    public enum Digest: String, Sendable, CaseIterable {
        case sha256, sha512, sha1, md5
    }

    /// Firebase's scrypt parameters, as `firebase auth:export` and the console's "password hash
    /// parameters" give them.
    public struct FirebaseScrypt: Sendable, Equatable {
        public var signerKey: [UInt8]
        public var saltSeparator: [UInt8]
        /// scrypt's r.
        public var rounds: Int
        /// log2 of scrypt's N.
        public var memoryCost: Int
        public var salt: [UInt8]
        public var hash: [UInt8]

        public init(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int, salt: [UInt8], hash: [UInt8]) {
            self.signerKey = signerKey
            self.saltSeparator = saltSeparator
            self.rounds = rounds
            self.memoryCost = memoryCost
            self.salt = salt
            self.hash = hash
        }
    }

    /// The parameters an imported hash may ask for: bounded, so that a crafted import cannot make one
    /// sign-in cost minutes of CPU or gigabytes of memory.
    public enum Bounds {
        public static let pbkdf2Rounds = 1...1_000_000
        /// N = 2^memoryCost; Firebase's own range is 1...14.
        public static let scryptLog2N = 1...20
        public static let scryptR = 1...32
        public static let scryptP = 1...16
        public static let hashBytes = 1...256
    }

    public init?(text: String) {
        let fields = text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        func bytes(_ index: Int) -> [UInt8]? {
            guard index < fields.count else { return nil }
            return Data(base64Encoded: fields[index]).map { Array($0) }
        }
        func integer(_ index: Int, _ range: ClosedRange<Int>) -> Int? {
            guard index < fields.count, let value = Int(fields[index]), range.contains(value) else { return nil }
            return value
        }
        switch fields.first {
        case "pbkdf2-sha256", "pbkdf2-sha1":
            guard fields.count == 4, let rounds = integer(1, Bounds.pbkdf2Rounds), let salt = bytes(2), let hash = bytes(3),
                Bounds.hashBytes.contains(hash.count)
            else { return nil }
            self = .pbkdf2(digest: fields[0] == "pbkdf2-sha1" ? .sha1 : .sha256, rounds: rounds, salt: salt, hash: hash)
        case "firebase-scrypt":
            guard fields.count == 7, let memoryCost = integer(1, Bounds.scryptLog2N), let rounds = integer(2, Bounds.scryptR),
                let separator = bytes(3), let salt = bytes(4), let hash = bytes(5), let key = bytes(6), hash.isEmpty == false, key.isEmpty == false
            else { return nil }
            self = .firebaseScrypt(
                FirebaseScrypt(signerKey: key, saltSeparator: separator, rounds: rounds, memoryCost: memoryCost, salt: salt, hash: hash))
        case "scrypt":
            guard fields.count == 6, let n = integer(1, 2...(1 << Bounds.scryptLog2N.upperBound)), n & (n - 1) == 0,
                let r = integer(2, Bounds.scryptR), let p = integer(3, Bounds.scryptP), let salt = bytes(4), let hash = bytes(5),
                Bounds.hashBytes.contains(hash.count)
            else { return nil }
            self = .scrypt(n: n, r: r, p: p, salt: salt, hash: hash)
        case let name? where name.hasPrefix("hmac-"):
            guard fields.count == 5, let digest = Digest(rawValue: String(name.dropFirst(5))), ["ps", "sp"].contains(fields[1]),
                let key = bytes(2), let salt = bytes(3), let hash = bytes(4), hash.isEmpty == false
            else { return nil }
            self = .hmac(digest: digest, passwordFirst: fields[1] == "ps", key: key, salt: salt, hash: hash)
        case "bcrypt":
            let crypt = String(text.dropFirst("bcrypt$".count))
            guard Self.isBcrypt(crypt) else { return nil }
            self = .bcrypt(crypt)
        case "unverifiable":
            guard fields.count == 2, fields[1].isEmpty == false else { return nil }
            self = .unverifiable(algorithm: fields[1])
        default:
            return nil
        }
    }

    /// `$2a$10$` + 53 characters of bcrypt's base64: a salt and a hash.
    public static func isBcrypt(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 60, bytes[0] == UInt8(ascii: "$"), bytes[1] == UInt8(ascii: "2"),
            [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "y")].contains(bytes[2]), bytes[3] == UInt8(ascii: "$"),
            let cost = Int(String(decoding: bytes[4..<6], as: UTF8.self)), (4...16).contains(cost), bytes[6] == UInt8(ascii: "$")
        else { return false }
        return bytes[7...].allSatisfy {
            $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "/") || ($0 < 0x80 && Character(UnicodeScalar($0)).isLetter) || ($0 >= 0x30 && $0 <= 0x39)
        }
    }

    public var text: String {
        func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
        switch self {
        case .pbkdf2(let digest, let rounds, let salt, let hash):
            return "pbkdf2-\(digest == .sha1 ? "sha1" : "sha256")$\(rounds)$\(b64(salt))$\(b64(hash))"
        case .firebaseScrypt(let f):
            return "firebase-scrypt$\(f.memoryCost)$\(f.rounds)$\(b64(f.saltSeparator))$\(b64(f.salt))$\(b64(f.hash))$\(b64(f.signerKey))"
        case .scrypt(let n, let r, let p, let salt, let hash):
            return "scrypt$\(n)$\(r)$\(p)$\(b64(salt))$\(b64(hash))"
        case .hmac(let digest, let passwordFirst, let key, let salt, let hash):
            return "hmac-\(digest.rawValue)$\(passwordFirst ? "ps" : "sp")$\(b64(key))$\(b64(salt))$\(b64(hash))"
        case .bcrypt(let crypt):
            return "bcrypt$" + crypt
        case .unverifiable(let algorithm):
            return "unverifiable$" + algorithm
        }
    }

    /// The name operators and metrics see (never a parameter).
    public var algorithm: String {
        switch self {
        case .pbkdf2(let digest, _, _, _): digest == .sha1 ? "pbkdf2-sha1" : "pbkdf2-sha256"
        case .firebaseScrypt: "firebase-scrypt"
        case .scrypt: "scrypt"
        case .hmac(let digest, _, _, _, _): "hmac-" + digest.rawValue
        case .bcrypt: "bcrypt"
        case .unverifiable: "unverifiable"
        }
    }
}

/// Base64 as the two sources write it: standard (`firebase auth:export`) or URL-safe (firebase-admin's
/// `import_users`), padded or not.
public enum LenientBase64 {
    public static func decode(_ text: String) -> [UInt8]? {
        var normal = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while normal.utf8.count % 4 != 0 { normal += "=" }
        return Data(base64Encoded: normal).map { Array($0) }
    }
}
