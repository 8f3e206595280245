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
        let errors = try await UserImport.run(users, projectID: project.id, hash: hash, store: store, now: clock.now)
            .map { RecordError(index: $0.index, message: $0.message) }
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
