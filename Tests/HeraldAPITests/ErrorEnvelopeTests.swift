import Foundation
import HeraldCore
import Hummingbird
import NIOCore
import Testing

@testable import HeraldAPI

/// `HeraldError.render` writes the envelope by hand; clients (and the Firebase SDKs' error mapping) got
/// the bytes Foundation's encoder wrote before, so the two are compared here for codes with and
/// without a status, prose messages, and details that need escaping.
@Suite("Identity Toolkit error envelope, byte for byte")
struct ErrorEnvelopeTests {
    /// The envelope as it was encoded before: sorted keys, slashes as they are.
    struct Envelope: Encodable {
        struct Body: Encodable {
            var code: Int
            var message: String
            var errors: [Item]
            var status: String?
        }
        struct Item: Encodable {
            var message: String
            var reason: String
            var domain = "global"
        }
        var error: Body
    }

    static func encoded(_ error: HeraldError) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let envelope = Envelope(
            error: .init(
                code: error.code.httpStatus, message: error.message,
                errors: [.init(message: error.message, reason: error.code.reason)], status: error.code.status))
        return String(decoding: try encoder.encode(envelope), as: UTF8.self)
    }

    static let errors: [HeraldError] = [
        HeraldError(.invalidPhoneNumber, "TOO_SHORT"),
        HeraldError(.invalidPhoneNumber, "Invalid format."),
        HeraldError(.missingAPIKey),
        HeraldError(.invalidAPIKey),
        HeraldError(.invalidJSON),
        HeraldError(.requestTooLarge, "Request payload size exceeds the limit: 65536 bytes."),
        HeraldError(.operationNotAllowed),
        HeraldError(.unavailable, "The service is temporarily unavailable. Try again later.", retryAfter: .seconds(5)),
        HeraldError(.invalidArgument, #"a "quoted" back\slash, a / slash, "# + "a tab\t, a newline\n, a return\r, ü, 日本, 👋"),
        HeraldError(.internalError),
        HeraldError(.notFound),
    ]

    @Test("the same bytes as JSONEncoder wrote, for every kind of error")
    func sameBytes() throws {
        for error in Self.errors {
            #expect(String(buffer: HeraldError.envelope(error)) == (try Self.encoded(error)), "\(error.code.name)")
        }
    }

    @Test("status, content type and Retry-After")
    func headers() {
        let unavailable = HeraldError.render(HeraldError(.unavailable, "down", retryAfter: .milliseconds(1_200)))
        #expect(unavailable.status.code == 503)
        #expect(unavailable.headers[.contentType] == "application/json; charset=UTF-8")
        #expect(unavailable.headers[.retryAfter] == "2")
        let invalid = HeraldError.render(HeraldError(.invalidPhoneNumber, "TOO_SHORT"))
        #expect(invalid.status.code == 400)
        #expect(invalid.headers[.retryAfter] == nil)
    }
}
