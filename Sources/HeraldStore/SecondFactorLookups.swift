import Foundation
import HeraldCore

/// "Does the user whose first factor is this number have a second factor?" is asked on every
/// sendVerificationCode. On PostgreSQL one query per send cost a round trip and about 130 µs of API
/// CPU (measured: 2,016 → 1,292 sends/s for one API); so the questions that arrive while one query
/// is in flight wait and go together as the next query, as `PostgresBatcher` does for admissions.
final class SecondFactorLookups: Sendable {
    private let backend: any SQLBackend
    private let queue = Coalescer<(projectID: String, phoneNumber: String), Bool>(inFlight: 1, maximumBatch: 256)

    init(backend: any SQLBackend) {
        self.backend = backend
    }

    func hasSecondFactor(projectID: String, phoneNumber: String) async throws -> Bool {
        try await queue.submit((projectID, phoneNumber)) { batch in await self.run(batch) }
    }

    private func run(_ batch: [Coalescer<(projectID: String, phoneNumber: String), Bool>.Waiting]) async {
        do {
            var writer = JSONWriter(capacity: 40 * batch.count)
            writer.array(batch.map { [.string($0.item.projectID), .string($0.item.phoneNumber)] })
            let rows = try await backend.statement(
                """
                SELECT u.project_id, u.phone_number FROM users u
                JOIN jsonb_array_elements(?::jsonb) q ON u.project_id = q->>0 AND u.phone_number = q->>1
                WHERE EXISTS (SELECT 1 FROM mfa_enrollments m WHERE m.project_id = u.project_id AND m.local_id = u.local_id)
                """, [.text(String(decoding: writer.bytes, as: UTF8.self))])
            let found = Set(rows.compactMap { row in row.count == 2 ? "\(row[0].string ?? "")\n\(row[1].string ?? "")" : nil })
            for waiting in batch {
                waiting.continuation.resume(returning: found.contains("\(waiting.item.projectID)\n\(waiting.item.phoneNumber)"))
            }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }
}
