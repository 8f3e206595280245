import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// Renders `HeraldError` in Identity Toolkit's envelope:
/// `{"error":{"code":400,"message":"CODE : detail","errors":[{"message":…,"reason":…,"domain":"global"}],"status":…}}`.
extension HeraldError: HTTPResponseError {
    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Self.render(self)
    }

    static func render(_ error: HeraldError) -> Response {
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
        let envelope = Envelope(
            error: .init(
                code: error.code.httpStatus, message: error.message,
                errors: [.init(message: error.message, reason: error.code.reason)], status: error.code.status))
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=UTF-8"
        if let retryAfter = error.retryAfter {
            headers[.retryAfter] = String(max(1, Int(retryAfter.seconds.rounded(.up))))
        }
        return Response(status: .init(code: error.code.httpStatus), headers: headers, body: .init(byteBuffer: JSONWire.encode(envelope)))
    }
}

/// JSON response bodies.
enum JSONWire {
    static func encode(_ value: some Encodable) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Response structs hold strings, numbers and booleans only.
        return ByteBuffer(data: try! encoder.encode(value))
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        response(body: encode(value), status: status)
    }

    /// A flat object of strings (sendVerificationCode's answer, on every send), keys sorted as the
    /// encoder sorts them, without a JSONEncoder.
    static func response(_ fields: [String: String], status: HTTPResponse.Status = .ok) -> Response {
        var writer = JSONWriter(capacity: 128)
        writer.object(fields.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })
        var buffer = ByteBufferAllocator().buffer(capacity: writer.count)
        writer.withBytes { buffer.writeBytes($0) }
        return response(body: buffer, status: status)
    }

    private static func response(body: ByteBuffer, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: jsonHeaders, body: .init(byteBuffer: body))
    }

    /// Made once: setting a field validates its value byte by byte, on every answer.
    private static let jsonHeaders: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
}

extension ByteBuffer {
    init(data: Data) {
        self = ByteBufferAllocator().buffer(capacity: data.count)
        writeBytes(data)
    }
}
