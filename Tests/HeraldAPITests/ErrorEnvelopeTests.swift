import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import HummingbirdTesting
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

/// What `IdentityToolkitErrorMiddleware` answers for the store's failures: a store that is unavailable
/// for now (PostgreSQL down, SQLite's lock held past the busy timeout) is 503 with Retry-After, so
/// clients retry; a failed statement is 500 without detail.
@Suite("Store failures on the wire")
struct StoreFailureAnswerTests {
    @Test("unavailable is 503 UNAVAILABLE with Retry-After; failed is 500 INTERNAL_ERROR")
    func storeFailures() async throws {
        let router = Router(context: HeraldRequestContext.self)
        router.add(middleware: IdentityToolkitErrorMiddleware())
        router.post("/locked") { _, _ -> Response in throw StoreError(.unavailable, "SQLite 5: database is locked") }
        router.post("/broken") { _, _ -> Response in throw StoreError(.failed, "SQLite 1: no such table: sessions") }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/locked", method: .post) { response in
                #expect(response.status.code == 503)
                #expect(response.headers[.retryAfter] == "5")
                #expect(String(buffer: response.body).contains(#""status":"UNAVAILABLE""#))
                #expect(String(buffer: response.body).contains("locked") == false)
            }
            try await client.execute(uri: "/broken", method: .post) { response in
                #expect(response.status.code == 500)
                #expect(String(buffer: response.body).contains(#""message":"INTERNAL_ERROR""#))
                #expect(String(buffer: response.body).contains("no such table") == false)
            }
        }
    }
}
