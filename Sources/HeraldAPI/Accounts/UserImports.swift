import Foundation
import HeraldCore
import Logging
import Metrics
import NIOCore

/// `accounts:batchCreate` (firebase-admin's `import_users`, legacy `uploadAccount`): up to 1,000 users,
/// each kept with its uid, profile, custom claims, disabled flag, Apple identity and password hash in
/// the algorithm it was made with (`UserImport`, `PasswordImport`). Nothing is hashed here: a user's
/// hash becomes Herald's at its first sign-in. A record that cannot be imported is reported by its
/// index (`error: [{index, message}]`, as Firebase answers and firebase-admin reads) and the others are
/// imported.
struct UserImports: Sendable {
    let store: any AccountStore
    let clock: any WallClock
    let logger: Logger

    /// 1,000 users of a few hundred bytes each, with room for long claims.
    static let maximumBodySize = 4 * 1024 * 1024

    struct RecordError: Encodable {
        var index: Int
        var message: String
    }

    struct Answer: Encodable {
        var kind = "identitytoolkit#UploadAccountResponse"
        var error: [RecordError]
    }

    func batchCreate(project: ProjectSettings, body: ByteBuffer) async throws -> Answer {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)), let fields = object as? [String: Any] else {
            throw HeraldError(.invalidJSON)
        }
        guard let users = fields["users"] as? [Any], users.isEmpty == false else { throw HeraldError(.missingUserAccount) }
        guard users.count <= UserImport.maximumUsers else {
            throw HeraldError(.invalidArgument, "A maximum of \(UserImport.maximumUsers) users can be imported at once.")
        }
        func value(_ name: String) -> String? {
            switch fields[name] {
            case let text as String: text.isEmpty ? nil : text
            case let number as NSNumber: number.stringValue
            default: nil
            }
        }
        let hash: PasswordImport?
        do {
            hash = try value("hashAlgorithm").map { name throws(ImportProblem) in try PasswordImport(hashAlgorithm: name, value: value) }
        } catch {
            throw HeraldError(.invalidArgument, error.message)
        }
        let now = clock.now
        var errors: [RecordError] = []
        var seen = Set<String>()
        for (index, entry) in users.enumerated() {
            do {
                guard let record = entry as? [String: Any] else { throw ImportProblem("a user is a JSON object") }
                let user = try UserImport.account(record, projectID: project.id, hash: hash, now: now) { try CustomClaims.validated($0) }
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
                errors.append(RecordError(index: index, message: problem.message))
            }
        }
        Counter(label: "herald_api_users_imported_total", dimensions: [("project", project.id)]).increment(by: users.count - errors.count)
        logger.info(
            "users imported",
            metadata: [
                "project": .string(project.id), "imported": .stringConvertible(users.count - errors.count),
                "refused": .stringConvertible(errors.count),
                "hashAlgorithm": .string(value("hashAlgorithm") ?? "none"),
            ])
        return Answer(error: errors)
    }
}
