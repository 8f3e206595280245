import Foundation
import HeraldCore

/// Accounts and their second factors. Uniqueness of email and phone number per project is the
/// database's job (partial unique indexes), so two API processes racing to create the same account
/// cannot both succeed.
extension SQLStore {
    static let userColumns =
        "local_id, project_id, phone_number, created_at_ms, last_login_at_ms, valid_since_ms, disabled, email, email_verified, password_hash, display_name, email_link_signin, custom_attributes, phone_proven"

    public func findOrCreateUser(projectID: String, phoneNumber: String, proven: Bool, now: Date) async throws -> (user: UserAccount, created: Bool) {
        let candidate = SecureRandom.alphanumeric(28)
        return try await run { db in
            let rows = try db.query(
                """
                INSERT INTO users (local_id, project_id, phone_number, created_at_ms, last_login_at_ms, phone_proven)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (project_id, phone_number) WHERE phone_number IS NOT NULL
                DO UPDATE SET last_login_at_ms = excluded.last_login_at_ms,
                  phone_proven = CASE WHEN excluded.phone_proven = 1 THEN 1 ELSE users.phone_proven END
                RETURNING \(Self.userColumns)
                """,
                [
                    .text(candidate), .text(projectID), .text(phoneNumber), .integer(now.millisecondsSince1970), .integer(now.millisecondsSince1970),
                    .integer(proven ? 1 : 0),
                ])
            guard let row = rows.first else { throw StoreError(.failed, "user upsert returned nothing") }
            var user = try Self.user(row)
            user.mfaEnrollments = try Self.enrollments(db, projectID: projectID, localID: user.localID)
            user.identities = try Self.identities(db, projectID: projectID, localID: user.localID)
            return (user, user.localID == candidate)
        }
    }

    public func user(projectID: String, localID: String) async throws -> UserAccount? {
        try await oneUser(projectID: projectID, where: "local_id = ?", .text(localID))
    }

    public func user(projectID: String, email: String) async throws -> UserAccount? {
        try await oneUser(projectID: projectID, where: "email = ?", .text(email.lowercased()))
    }

    public func user(projectID: String, phoneNumber: String) async throws -> UserAccount? {
        try await oneUser(projectID: projectID, where: "phone_number = ?", .text(phoneNumber))
    }

    private func oneUser(projectID: String, where condition: String, _ values: SQLValue...) async throws -> UserAccount? {
        try await oneUser(projectID: projectID, where: condition, values)
    }

    private func oneUser(projectID: String, where condition: String, _ values: [SQLValue]) async throws -> UserAccount? {
        try await run { db in
            guard
                let row = try db.query(
                    "SELECT \(Self.userColumns) FROM users WHERE project_id = ? AND \(condition)", [.text(projectID)] + values
                ).first
            else { return nil }
            var user = try Self.user(row)
            user.mfaEnrollments = try Self.enrollments(db, projectID: projectID, localID: user.localID)
            user.identities = try Self.identities(db, projectID: projectID, localID: user.localID)
            return user
        }
    }

    public func users(projectID: String, after: String?, limit: Int) async throws -> [UserAccount] {
        try await read { db in
            try db.query(
                "SELECT \(Self.userColumns) FROM users WHERE project_id = ? AND local_id > ? ORDER BY local_id LIMIT ?",
                [.text(projectID), .text(after ?? ""), .integer(Int64(limit))]
            ).map { row in
                var user = try Self.user(row)
                user.mfaEnrollments = try Self.enrollments(db, projectID: projectID, localID: user.localID)
                user.identities = try Self.identities(db, projectID: projectID, localID: user.localID)
                return user
            }
        }
    }

    public func hasSecondFactor(projectID: String, phoneNumber: String) async throws -> Bool {
        return try await run { db in try Self.hasSecondFactor(db, projectID: projectID, phoneNumber: phoneNumber) }
    }

    static func hasSecondFactor(_ db: any SQLConnection, projectID: String, phoneNumber: String) throws -> Bool {
        try db.query(
            """
            SELECT 1 FROM users u JOIN mfa_enrollments m ON m.project_id = u.project_id AND m.local_id = u.local_id
            WHERE u.project_id = ? AND u.phone_number = ? LIMIT 1
            """, [.text(projectID), .text(phoneNumber)]
        ).isEmpty == false
    }

    public func user(projectID: String, providerID: String, federatedID: String) async throws -> UserAccount? {
        try await oneUser(
            projectID: projectID,
            where: "local_id = (SELECT local_id FROM federated_identities WHERE project_id = ? AND provider_id = ? AND federated_id = ?)",
            [.text(projectID), .text(providerID), .text(federatedID)])
    }

    public func insertUser(_ user: UserAccount) async throws {
        try await run { db in
            do {
                try db.transaction {
                    try db.query(
                        """
                        INSERT INTO users (\(Self.userColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, Self.bindings(user))
                    for identity in user.identities {
                        guard try Self.insertIdentity(db, identity, projectID: user.projectID, localID: user.localID) else {
                            throw AccountConflict.federatedIDExists
                        }
                    }
                }
            } catch let error as StoreError {
                throw Self.conflict(error) ?? error
            }
        }
    }

    public func linkIdentity(_ identity: FederatedIdentity, projectID: String, localID: String) async throws {
        try await run { db in
            do {
                guard try Self.insertIdentity(db, identity, projectID: projectID, localID: localID) else {
                    throw AccountConflict.federatedIDExists
                }
            } catch let error as StoreError {
                throw Self.conflict(error) ?? error
            }
        }
    }

    /// Inserts the identity, or refreshes it when the same user has it; false when another user has it.
    @discardableResult
    static func insertIdentity(_ db: any SQLConnection, _ identity: FederatedIdentity, projectID: String, localID: String) throws -> Bool {
        try db.query(
            """
            INSERT INTO federated_identities
              (project_id, provider_id, federated_id, local_id, email, email_verified, private_email, display_name, linked_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (project_id, provider_id, federated_id) DO UPDATE SET
              email = excluded.email, email_verified = excluded.email_verified, private_email = excluded.private_email,
              display_name = COALESCE(excluded.display_name, federated_identities.display_name)
            WHERE federated_identities.local_id = excluded.local_id
            RETURNING local_id
            """,
            [
                .text(projectID), .text(identity.providerID), .text(identity.federatedID), .text(localID),
                identity.email.map { .text($0.lowercased()) } ?? .null, .integer(identity.emailVerified ? 1 : 0),
                .integer(identity.isPrivateEmail ? 1 : 0), identity.displayName.map(SQLValue.text) ?? .null,
                .integer(identity.linkedAt.millisecondsSince1970),
            ]
        ).isEmpty == false
    }

    public func unlinkIdentity(projectID: String, localID: String, providerID: String) async throws -> Bool {
        try await run { db in
            try db.query(
                "DELETE FROM federated_identities WHERE project_id = ? AND local_id = ? AND provider_id = ?",
                [.text(projectID), .text(localID), .text(providerID)])
            return db.changes > 0
        }
    }

    static func identities(_ db: any SQLConnection, projectID: String, localID: String) throws -> [FederatedIdentity] {
        try db.query(
            """
            SELECT provider_id, federated_id, email, email_verified, private_email, display_name, linked_at_ms FROM federated_identities
            WHERE project_id = ? AND local_id = ? ORDER BY linked_at_ms, provider_id
            """, [.text(projectID), .text(localID)]
        ).map { row in
            guard let provider = row[0].string, let id = row[1].string, let linked = row[6].int else {
                throw StoreError(.failed, "malformed federated_identities row")
            }
            return FederatedIdentity(
                providerID: provider, federatedID: id, email: row[2].string, emailVerified: (row[3].int ?? 0) != 0,
                isPrivateEmail: (row[4].int ?? 0) != 0, displayName: row[5].string, linkedAt: Date(milliseconds: linked))
        }
    }

    public func spendCredential(hash: String, projectID: String, expiresAt: Date) async throws -> Bool {
        try await run { db in
            try db.query(
                "INSERT INTO idp_credentials (credential_hash, project_id, expires_at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(hash), .text(projectID), .integer(expiresAt.millisecondsSince1970)])
            return db.changes > 0
        }
    }

    public func purgeCredentials(expiredBefore date: Date, limit: Int) async throws -> Int {
        try await purgeExpired("idp_credentials", key: "credential_hash", by: "expires_at_ms", before: date, limit: limit)
    }

    public func updateUser(_ user: UserAccount) async throws {
        try await run { db in
            do {
                var values = Array(Self.bindings(user).dropFirst(2))
                values += [.text(user.projectID), .text(user.localID)]
                try db.query(
                    """
                    UPDATE users SET phone_number = ?, created_at_ms = ?, last_login_at_ms = ?, valid_since_ms = ?, disabled = ?,
                      email = ?, email_verified = ?, password_hash = ?, display_name = ?, email_link_signin = ?, custom_attributes = ?,
                      phone_proven = ?
                    WHERE project_id = ? AND local_id = ?
                    """, values)
            } catch let error as StoreError {
                throw Self.conflict(error) ?? error
            }
        }
    }

    public func deleteUser(projectID: String, localID: String) async throws -> Bool {
        try await run { db in
            try db.transaction {
                try db.query("DELETE FROM users WHERE project_id = ? AND local_id = ?", [.text(projectID), .text(localID)])
                let deleted = db.changes > 0
                try db.query("DELETE FROM mfa_enrollments WHERE project_id = ? AND local_id = ?", [.text(projectID), .text(localID)])
                try db.query("DELETE FROM federated_identities WHERE project_id = ? AND local_id = ?", [.text(projectID), .text(localID)])
                try db.query("DELETE FROM refresh_tokens WHERE project_id = ? AND local_id = ?", [.text(projectID), .text(localID)])
                return deleted
            }
        }
    }

    public func deleteAllUsers(projectID: String) async throws -> Int {
        try await run { db in
            try db.transaction {
                try db.query("DELETE FROM users WHERE project_id = ?", [.text(projectID)])
                let deleted = db.changes
                try db.query("DELETE FROM mfa_enrollments WHERE project_id = ?", [.text(projectID)])
                try db.query("DELETE FROM federated_identities WHERE project_id = ?", [.text(projectID)])
                try db.query("DELETE FROM refresh_tokens WHERE project_id = ?", [.text(projectID)])
                return deleted
            }
        }
    }

    public func addMFAEnrollment(_ enrollment: MFAEnrollment, projectID: String, localID: String) async throws {
        try await run { db in
            try db.query(
                """
                INSERT INTO mfa_enrollments (project_id, local_id, enrollment_id, phone_number, display_name, enrolled_at_ms)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(projectID), .text(localID), .text(enrollment.enrollmentID), .text(enrollment.phoneNumber),
                    enrollment.displayName.map(SQLValue.text) ?? .null, .integer(enrollment.enrolledAt.millisecondsSince1970),
                ])
        }
    }

    public func removeMFAEnrollment(projectID: String, localID: String, enrollmentID: String) async throws -> Bool {
        try await run { db in
            try db.query(
                "DELETE FROM mfa_enrollments WHERE project_id = ? AND local_id = ? AND enrollment_id = ?",
                [.text(projectID), .text(localID), .text(enrollmentID)])
            return db.changes > 0
        }
    }

    static func enrollments(_ db: any SQLConnection, projectID: String, localID: String) throws -> [MFAEnrollment] {
        try db.query(
            """
            SELECT enrollment_id, phone_number, display_name, enrolled_at_ms FROM mfa_enrollments
            WHERE project_id = ? AND local_id = ? ORDER BY enrolled_at_ms, enrollment_id
            """, [.text(projectID), .text(localID)]
        ).map { row in
            guard let id = row[0].string, let phone = row[1].string, let enrolled = row[3].int else {
                throw StoreError(.failed, "malformed mfa_enrollments row")
            }
            return MFAEnrollment(enrollmentID: id, phoneNumber: phone, displayName: row[2].string, enrolledAt: Date(milliseconds: enrolled))
        }
    }

    static func bindings(_ user: UserAccount) -> [SQLValue] {
        [
            .text(user.localID), .text(user.projectID), user.phoneNumber.map(SQLValue.text) ?? .null,
            .integer(user.createdAt.millisecondsSince1970), .integer(user.lastLoginAt.millisecondsSince1970),
            user.validSince.map { .integer($0.millisecondsSince1970) } ?? .null, .integer(user.disabled ? 1 : 0),
            user.email.map { .text($0.lowercased()) } ?? .null, .integer(user.emailVerified ? 1 : 0),
            user.passwordHash.map(SQLValue.text) ?? .null, user.displayName.map(SQLValue.text) ?? .null,
            .integer(user.emailLinkSignin ? 1 : 0), user.customAttributes.map(SQLValue.text) ?? .null,
            .integer(user.phoneNumber != nil && user.phoneProven ? 1 : 0),
        ]
    }

    /// Which uniqueness rule a failed write broke: SQLite names the columns
    /// (`users.project_id, users.email`), PostgreSQL the index (`users_email`, `users_phone`, `users_pkey`,
    /// `federated_identities_pkey`, `federated_identities_user`).
    static func conflict(_ error: StoreError) -> AccountConflict? {
        guard case .unique(let what) = error.kind else { return nil }
        // SQLite: `federated_identities.project_id, federated_identities.local_id, …`; PostgreSQL: the index name.
        if what.contains("federated_identities") {
            return what.contains("local_id") || what.contains("federated_identities_user") ? .providerAlreadyLinked : .federatedIDExists
        }
        if what.contains("email") { return .emailExists }
        if what.contains("phone") { return .phoneNumberExists }
        if what.contains("local_id") || what.contains("users_pkey") { return .localIDExists }
        return nil
    }

    static func user(_ row: [SQLValue]) throws -> UserAccount {
        guard row.count == 14, let localID = row[0].string, let project = row[1].string, let created = row[3].int,
            let lastLogin = row[4].int
        else { throw StoreError(.failed, "malformed users row") }
        return UserAccount(
            localID: localID, projectID: project, phoneNumber: row[2].string, email: row[7].string,
            emailVerified: (row[8].int ?? 0) != 0, passwordHash: row[9].string, displayName: row[10].string,
            emailLinkSignin: (row[11].int ?? 0) != 0, createdAt: .init(milliseconds: created),
            lastLoginAt: .init(milliseconds: lastLogin), validSince: row[5].int.map(Date.init(milliseconds:)),
            disabled: row[6].int.map { $0 != 0 } ?? false, customAttributes: row[12].string, phoneProven: (row[13].int ?? 0) != 0)
    }
}

/// Email action codes, and the devMode listings of open codes.
extension SQLStore {
    static let oobColumns =
        "code_hash, project_id, request_type, email, created_at_ms, expires_at_ms, consumed_at_ms, job_id, link_sealed, local_id, new_email, in_app"

    public func insertOobCode(_ record: OobRecord) async throws {
        try await run { db in
            try db.query(
                "INSERT INTO oob_codes (\(Self.oobColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(record.codeHash), .text(record.projectID), .text(record.requestType), .text(record.email),
                    .integer(record.createdAt.millisecondsSince1970), .integer(record.expiresAt.millisecondsSince1970),
                    record.consumedAt.map { .integer($0.millisecondsSince1970) } ?? .null,
                    record.jobID.map { .text($0.lowercasedText) } ?? .null, record.linkSealed.map(SQLValue.text) ?? .null,
                    record.localID.map(SQLValue.text) ?? .null, record.newEmail.map(SQLValue.text) ?? .null, .integer(record.inApp ? 1 : 0),
                ])
        }
    }

    public func oobCode(hash: String) async throws -> OobRecord? {
        try await run { db in
            try db.query("SELECT \(Self.oobColumns) FROM oob_codes WHERE code_hash = ?", [.text(hash)]).first.map(Self.oob)
        }
    }

    public func deleteOobCode(hash: String) async throws {
        try await run { db in
            try db.query("DELETE FROM oob_codes WHERE code_hash = ?", [.text(hash)])
        }
    }

    public func consumeOobCode(hash: String, at date: Date) async throws -> Bool {
        try await run { db in
            try db.query(
                "UPDATE oob_codes SET consumed_at_ms = ? WHERE code_hash = ? AND consumed_at_ms IS NULL RETURNING code_hash",
                [.integer(date.millisecondsSince1970), .text(hash)]
            ).isEmpty == false
        }
    }

    public func openOobCodes(projectID: String, now: Date) async throws -> [OobRecord] {
        try await read { db in
            try db.query(
                """
                SELECT \(Self.oobColumns) FROM oob_codes
                WHERE project_id = ? AND consumed_at_ms IS NULL AND expires_at_ms > ? ORDER BY created_at_ms
                """, [.text(projectID), .integer(now.millisecondsSince1970)]
            ).map(Self.oob)
        }
    }

    public func openSessions(projectID: String, now: Date) async throws -> [VerificationSession] {
        try await read { db in
            try db.query(
                """
                SELECT \(Self.sessionColumns) FROM verification_sessions
                WHERE project_id = ? AND consumed_at_ms IS NULL AND expires_at_ms > ? ORDER BY created_at_ms
                """, [.text(projectID), .integer(now.millisecondsSince1970)]
            ).map(Self.session)
        }
    }

    public func purgeOobCodes(expiredBefore date: Date, limit: Int) async throws -> Int {
        try await purgeExpired("oob_codes", key: "code_hash", by: "expires_at_ms", before: date, limit: limit)
    }

    static func oob(_ row: [SQLValue]) throws -> OobRecord {
        guard row.count == 12, let hash = row[0].string, let project = row[1].string, let type = row[2].string, let email = row[3].string,
            let created = row[4].int, let expires = row[5].int
        else { throw StoreError(.failed, "malformed oob_codes row") }
        return OobRecord(
            codeHash: hash, projectID: project, requestType: type, email: email, createdAt: Date(milliseconds: created),
            expiresAt: Date(milliseconds: expires), consumedAt: row[6].int.map(Date.init(milliseconds:)),
            jobID: row[7].string.flatMap(UUID.init(parsing:)), linkSealed: row[8].string, localID: row[9].string, newEmail: row[10].string,
            inApp: row[11].int == 1)
    }
}
