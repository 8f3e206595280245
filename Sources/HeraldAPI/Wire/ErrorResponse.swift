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

    /// Written member by member in the encoder's sorted key order, without a JSONEncoder: refusals are
    /// the answers an abusive client gets by the thousand (limits, bad numbers), and Foundation's
    /// encoder cost about 63,000 instructions per refusal, a quarter of one refused at its phone number
    /// (callgrind, `{"phoneNumber":"+1"}` under wrk). The bytes are those the encoder wrote
    /// (`ErrorEnvelopeTests` compares the two).
    static func render(_ error: HeraldError) -> Response {
        var headers = JSONWire.jsonHeaders
        if let retryAfter = error.retryAfter {
            headers[.retryAfter] = String(max(1, Int(retryAfter.seconds.rounded(.up))))
        }
        return Response(status: .init(code: error.code.httpStatus), headers: headers, body: .init(byteBuffer: envelope(error)))
    }

    /// The envelope's bytes.
    static func envelope(_ error: HeraldError) -> ByteBuffer {
        var writer = JSONWriter(capacity: 192 + 2 * error.message.utf8.count)
        writer.beginObject()
        writer.beginMember("error")
        writer.beginObject()
        writer.member("code", .integer(Int64(error.code.httpStatus)))
        writer.beginMember("errors")
        writer.beginList()
        writer.element()
        writer.beginObject()
        writer.member("domain", .string("global"))
        writer.member("message", .string(error.message))
        writer.member("reason", .string(error.code.reason))
        writer.endObject()
        writer.endList()
        writer.member("message", .string(error.message))
        writer.member("status", error.code.status.map { .string($0) })
        writer.endObject()
        writer.endObject()
        var body = ByteBufferAllocator().buffer(capacity: writer.count)
        writer.withBytes { body.writeBytes($0) }
        return body
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
    static let jsonHeaders: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
}

extension ByteBuffer {
    init(data: Data) {
        self = ByteBufferAllocator().buffer(capacity: data.count)
        writeBytes(data)
    }
}
