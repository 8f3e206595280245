import Crypto
import Foundation

/// The generic gateway's receipt signature: `X-Herald-Timestamp: <Unix seconds>` and
/// `X-Herald-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">` under
/// `sms.http.callbackSecret`, the timestamp within `tolerance` of the receiver's clock.
///
/// The timestamp is signed with the body so that a captured receipt cannot be sent again later: a
/// signature over the body alone would stay valid for ever. A replay inside the window is harmless,
/// because a message keeps the first final status it is given (`MessageLedger.applyReceipt`).
public struct ReceiptSignature: Sendable {
    public static let timestampHeader = "X-Herald-Timestamp"
    public static let signatureHeader = "X-Herald-Signature"
    /// How far the sender's clock may be from ours, either way.
    public static let tolerance: TimeInterval = 300

    let key: SymmetricKey

    public init(secret: Data) {
        key = SymmetricKey(data: secret)
    }

    /// Why a receipt was refused; `message` is the answer's text (it names no secret and no MAC).
    public struct Refusal: Error, Equatable, Sendable {
        public var message: String
    }

    /// The bytes that are signed.
    public static func signedBytes(timestamp: String, body: Data) -> Data {
        Data(timestamp.utf8) + Data(".".utf8) + body
    }

    /// `sha256=<hex>` for a receipt sent at `timestamp`: what a gateway (or a test) sends.
    public func sign(_ body: Data, timestamp: String) -> String {
        JobSignature.sign(Self.signedBytes(timestamp: timestamp, body: body), key: key)
    }

    /// Checks both headers against the raw body at `now`.
    public func verify(_ body: Data, timestamp: String?, signature: String?, now: Date) -> Result<Void, Refusal> {
        guard let timestamp else {
            return .failure(Refusal(message: "\(Self.timestampHeader) is missing: receipts sign \"<timestamp>.<body>\"."))
        }
        guard timestamp.utf8.count <= 12, timestamp.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let seconds = Int64(timestamp)
        else {
            return .failure(Refusal(message: "\(Self.timestampHeader) must be Unix seconds."))
        }
        guard abs(TimeInterval(seconds) - now.timeIntervalSince1970) <= Self.tolerance else {
            return .failure(
                Refusal(message: "\(Self.timestampHeader) is more than \(Int(Self.tolerance)) seconds from the receiver's clock."))
        }
        guard JobSignature.verify(Self.signedBytes(timestamp: timestamp, body: body), signature: signature, key: key) else {
            return .failure(
                Refusal(
                    message:
                        "\(Self.signatureHeader) is missing or does not match (sha256=<hex HMAC-SHA256 of \"<\(Self.timestampHeader)>.<body>\">)."
                ))
        }
        return .success(())
    }
}
