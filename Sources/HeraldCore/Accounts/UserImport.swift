import Foundation

/// How imported password hashes were made: `accounts:batchCreate`'s `hashAlgorithm` and its parameters
/// (what firebase-admin's `UserImportHash` sends, and what `firebase auth:export` users get from the
/// console's "password hash parameters").
public struct PasswordImport: Sendable, Equatable {
    public enum Algorithm: Sendable, Equatable {
        case firebaseScrypt(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int)
        case scrypt(n: Int, r: Int, p: Int)
        case pbkdf2(StoredPassword.Digest, rounds: Int)
        case hmac(StoredPassword.Digest, key: [UInt8], passwordFirst: Bool)
        case bcrypt
        /// Known to Firebase, not verifiable here (MD5, SHA1, SHA256, SHA512, ARGON2, …).
        case unverifiable(String)
    }

    public var algorithm: Algorithm

    public init(algorithm: Algorithm) { self.algorithm = algorithm }

    /// Every `hashAlgorithm` Firebase accepts.
    public static let firebaseAlgorithms: Set<String> = [
        "SCRYPT", "STANDARD_SCRYPT", "PBKDF2_SHA256", "PBKDF_SHA1", "HMAC_SHA256", "HMAC_SHA512", "HMAC_SHA1", "HMAC_MD5", "BCRYPT", "MD5", "SHA1",
        "SHA256", "SHA512", "ARGON2",
    ]

    /// Reads the options from the request (or the command line, as the same names). `value(name)` gives
    /// a field's text (numbers as their decimal text).
    public init(hashAlgorithm name: String, value: (String) -> String?) throws(ImportProblem) {
        func bytes(_ field: String, required: Bool) throws(ImportProblem) -> [UInt8] {
            guard let text = value(field) else {
                if required { throw ImportProblem("\(field) is required for \(name)") }
                return []
            }
            guard let decoded = LenientBase64.decode(text) else { throw ImportProblem("\(field) is not base64") }
            return decoded
        }
        func integer(_ field: String, _ range: ClosedRange<Int>, default fallback: Int? = nil) throws(ImportProblem) -> Int {
            guard let text = value(field) else {
                if let fallback { return fallback }
                throw ImportProblem("\(field) is required for \(name)")
            }
            guard let number = Int(text), range.contains(number) else {
                throw ImportProblem("\(field) must be between \(range.lowerBound) and \(range.upperBound)")
            }
            return number
        }
        let bounds = StoredPassword.Bounds.self
        switch name {
        case "SCRYPT":
            algorithm = .firebaseScrypt(
                signerKey: try bytes("signerKey", required: true), saltSeparator: try bytes("saltSeparator", required: false),
                rounds: try integer("rounds", bounds.scryptR), memoryCost: try integer("memoryCost", bounds.scryptLog2N))
        case "STANDARD_SCRYPT":
            let n = try integer(
                "cpuMemCost", 2...(1 << bounds.scryptLog2N.upperBound), default: try integer("memoryCost", 2...(1 << bounds.scryptLog2N.upperBound)))
            guard n & (n - 1) == 0 else { throw ImportProblem("cpuMemCost must be a power of two") }
            algorithm = .scrypt(n: n, r: try integer("blockSize", bounds.scryptR), p: try integer("parallelization", bounds.scryptP))
        case "PBKDF2_SHA256", "PBKDF_SHA1":
            algorithm = .pbkdf2(name == "PBKDF_SHA1" ? .sha1 : .sha256, rounds: try integer("rounds", bounds.pbkdf2Rounds))
        case "HMAC_SHA256", "HMAC_SHA512", "HMAC_SHA1", "HMAC_MD5":
            let digest: StoredPassword.Digest = [
                "HMAC_SHA256": .sha256, "HMAC_SHA512": .sha512, "HMAC_SHA1": .sha1, "HMAC_MD5": .md5,
            ][name]!
            let order = value("passwordHashOrder") ?? "PASSWORD_AND_SALT"
            guard ["PASSWORD_AND_SALT", "SALT_AND_PASSWORD", "UNSPECIFIED_ORDER"].contains(order) else {
                throw ImportProblem("passwordHashOrder must be PASSWORD_AND_SALT or SALT_AND_PASSWORD")
            }
            algorithm = .hmac(digest, key: try bytes("signerKey", required: true), passwordFirst: order != "SALT_AND_PASSWORD")
        case "BCRYPT":
            algorithm = .bcrypt
        case _ where Self.firebaseAlgorithms.contains(name):
            algorithm = .unverifiable(name)
        default:
            throw ImportProblem(
                "hashAlgorithm \(String(name.prefix(40).filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })) is not one Firebase knows"
            )
        }
    }

    /// A user's stored hash from its imported hash and salt.
    public func stored(hash: [UInt8], salt: [UInt8]) throws(ImportProblem) -> StoredPassword {
        guard StoredPassword.Bounds.hashBytes.contains(hash.count) else { throw ImportProblem("passwordHash has an impossible length") }
        switch algorithm {
        case .firebaseScrypt(let key, let separator, let rounds, let memoryCost):
            return .firebaseScrypt(
                .init(signerKey: key, saltSeparator: separator, rounds: rounds, memoryCost: memoryCost, salt: salt, hash: hash))
        case .scrypt(let n, let r, let p):
            return .scrypt(n: n, r: r, p: p, salt: salt, hash: hash)
        case .pbkdf2(let digest, let rounds):
            return .pbkdf2(digest: digest, rounds: rounds, salt: salt, hash: hash)
        case .hmac(let digest, let key, let passwordFirst):
            return .hmac(digest: digest, passwordFirst: passwordFirst, key: key, salt: salt, hash: hash)
        case .bcrypt:
            // firebase-admin sends the crypt text's bytes as the hash.
            let text = String(decoding: hash, as: UTF8.self)
            guard StoredPassword.isBcrypt(text) else { throw ImportProblem("passwordHash is not a bcrypt hash ($2a$, $2b$ or $2y$)") }
            return .bcrypt(text)
        case .unverifiable(let name):
            return .unverifiable(algorithm: name)
        }
    }
}

/// Why one imported user (or the import's options) was refused; the text goes back to the caller as
/// `error[].message`, and never holds a hash or a password.
public struct ImportProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One user of an import (`accounts:batchCreate`, `firebase auth:export`'s `users[]`), read into an
/// account. Keeps what Firebase keeps: uid, email and its verification, phone number, display name,
/// custom claims, the disabled flag, times, the password hash, and the `apple.com` identity.
public enum UserImport {
    /// The most users one request may carry (Firebase's own limit).
    public static let maximumUsers = 1000

    /// Imports `records` (JSONSerialization objects) into `store`, each on its own: returns the index and
    /// reason of each one refused; the others are stored.
    public static func run(
        _ records: [Any], projectID: String, hash: PasswordImport?, store: any AccountStore, now: Date
    ) async throws -> [(index: Int, message: String)] {
        var refused: [(index: Int, message: String)] = []
        var seen = Set<String>()
        for (index, entry) in records.enumerated() {
            do {
                guard let record = entry as? [String: Any] else { throw ImportProblem("a user is a JSON object") }
                let user = try account(record, projectID: projectID, hash: hash, now: now) { try CustomClaims.validated($0) }
                guard seen.insert(user.localID).inserted else { throw ImportProblem("DUPLICATE_LOCAL_ID : \(user.localID)") }
                do {
                    try await store.insertUser(user)
                } catch let conflict as AccountConflict {
                    switch conflict {
                    case .localIDExists: throw ImportProblem("localId belongs to an existing account - can not overwrite.")
                    case .emailExists: throw ImportProblem("email exists in other account in database")
                    case .phoneNumberExists: throw ImportProblem("phone number exists in other account in database")
                    case .federatedIDExists, .providerAlreadyLinked: throw ImportProblem("raw id exists in other account in database")
                    }
                }
            } catch let problem as ImportProblem {
                refused.append((index, problem.message))
            }
        }
        return refused
    }

    /// `record` as JSONSerialization reads it. `validClaims` checks custom claims (`CustomClaims`).
    public static func account(
        _ record: [String: Any], projectID: String, hash: PasswordImport?, now: Date, validateClaims: (String) throws -> String?
    ) throws(ImportProblem) -> UserAccount {
        func string(_ name: String) -> String? {
            switch record[name] {
            case let text as String: return text.isEmpty ? nil : text
            case is Bool: return nil
            case let number as Int: return String(number)
            case let number as Double: return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
            default: return nil
            }
        }
        func flag(_ name: String) throws(ImportProblem) -> Bool {
            switch record[name] {
            case nil, is NSNull: return false
            case let value as Bool: return value
            case let text as String where text == "true" || text == "false": return text == "true"
            default: throw ImportProblem("\(name) must be true or false")
            }
        }
        func time(_ names: String...) -> Date? {
            for name in names {
                if let text = string(name), let milliseconds = Double(text), milliseconds >= 0 {
                    return Date(timeIntervalSince1970: milliseconds / 1000)
                }
            }
            return nil
        }
        guard let localID = string("localId") else { throw ImportProblem("localId is missing") }
        guard localID.utf8.count <= 128 else { throw ImportProblem("localId is longer than 128 characters") }
        var user = UserAccount(
            localID: localID, projectID: projectID, createdAt: time("createdAt") ?? now,
            lastLoginAt: time("lastLoginAt", "lastSignedInAt") ?? time("createdAt") ?? now)
        if let email = string("email") {
            guard let address = EmailAddress(email) else { throw ImportProblem("email is invalid") }
            user.email = address.value
        }
        user.emailVerified = try flag("emailVerified")
        user.disabled = try flag("disabled")
        user.displayName = string("displayName")
        if let phone = string("phoneNumber") {
            guard let parsed = try? PhoneNumber(parsing: phone), parsed.e164 == phone else {
                throw ImportProblem("phone number format is invalid")
            }
            user.phoneNumber = parsed.e164
        }
        if let claims = string("customAttributes") {
            do {
                user.customAttributes = try validateClaims(claims)
            } catch {
                throw ImportProblem("Invalid custom claims provided.")
            }
        }
        if let hashText = string("passwordHash") {
            guard let hash else { throw ImportProblem("passwordHash needs the import's hashAlgorithm") }
            guard let hashBytes = LenientBase64.decode(hashText) else { throw ImportProblem("passwordHash is not base64") }
            var salt: [UInt8] = []
            if let saltText = string("salt") {
                guard let decoded = LenientBase64.decode(saltText) else { throw ImportProblem("salt is not base64") }
                salt = decoded
            }
            user.passwordHash = try hash.stored(hash: hashBytes, salt: salt).text
        }
        for entry in record["providerUserInfo"] as? [Any] ?? [] {
            guard let info = entry as? [String: Any], let providerID = info["providerId"] as? String else {
                throw ImportProblem("providerUserInfo entries need a providerId")
            }
            // password and phone come from the account's own fields; only Apple is linked here.
            guard providerID == "apple.com" else { continue }
            guard let rawID = (info["rawId"] as? String) ?? (info["federatedId"] as? String), rawID.isEmpty == false else {
                throw ImportProblem("federatedId or (providerId & rawId) is required")
            }
            guard user.identities.isEmpty else { throw ImportProblem("an account has at most one apple.com identity") }
            let email = (info["email"] as? String).flatMap(EmailAddress.init)
            user.identities.append(
                FederatedIdentity(
                    providerID: providerID, federatedID: rawID, email: email?.value, emailVerified: email != nil,
                    isPrivateEmail: email?.isPrivateRelay ?? false, displayName: info["displayName"] as? String, linkedAt: user.createdAt))
        }
        return user
    }
}
