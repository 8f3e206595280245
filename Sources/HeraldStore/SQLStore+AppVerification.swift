import Foundation
import HeraldCore

extension SQLStore {
    public func insertReceipt(_ receipt: AppReceipt) async throws {
        try await run { db in
            try db.query(
                """
                INSERT INTO app_receipts (receipt_hash, project_id, bundle_id, secret_hash, device_token_hash, created_at_ms)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(receipt.receiptHash), .text(receipt.projectID), .text(receipt.bundleID), .text(receipt.secretHash),
                    .text(receipt.deviceTokenHash), .integer(receipt.createdAt.millisecondsSince1970),
                ])
        }
    }

    public func receipt(hash: String) async throws -> AppReceipt? {
        try await run { db in
            guard
                let row = try db.query(
                    "SELECT receipt_hash, project_id, bundle_id, secret_hash, device_token_hash, created_at_ms FROM app_receipts WHERE receipt_hash = ?",
                    [.text(hash)]
                ).first, let receiptHash = row[0].string, let project = row[1].string, let bundle = row[2].string,
                let secret = row[3].string, let token = row[4].string, let created = row[5].int
            else { return nil }
            return AppReceipt(
                receiptHash: receiptHash, projectID: project, bundleID: bundle, secretHash: secret, deviceTokenHash: token,
                createdAt: Date(milliseconds: created))
        }
    }

    public func deleteReceipt(hash: String) async throws {
        try await run { db in try db.query("DELETE FROM app_receipts WHERE receipt_hash = ?", [.text(hash)]) }
    }

    public func purgeReceipts(issuedBefore date: Date, limit: Int) async throws -> Int {
        try await purgeExpired("app_receipts", key: "receipt_hash", by: "created_at_ms", before: date, limit: limit)
    }

    public func markDeviceTokenInvalid(hash: String, reason: String, since: Date) async throws {
        try await run { db in
            try db.query(
                """
                INSERT INTO invalid_device_tokens (token_hash, reason, invalid_since_ms) VALUES (?, ?, ?)
                ON CONFLICT (token_hash) DO UPDATE SET reason = excluded.reason, invalid_since_ms = excluded.invalid_since_ms
                """, [.text(hash), .text(reason), .integer(since.millisecondsSince1970)])
        }
    }

    public func invalidDeviceToken(hash: String) async throws -> String? {
        try await run { db in
            try db.query("SELECT reason FROM invalid_device_tokens WHERE token_hash = ?", [.text(hash)]).first?[0].string
        }
    }
}
