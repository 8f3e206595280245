import Foundation

/// JSON body of a job (schema v1). Decoding is strict about what a worker needs and names the field
/// that is wrong, because whoever reads the dead-letter reason has to fix it.
public enum JobCodec {
    /// Why a body was refused; the message goes into the dead-letter reason.
    public struct DecodingError: Error, Equatable, CustomStringConvertible {
        public var field: String
        public var problem: String
        public var description: String { "\(field): \(problem)" }
    }

    private struct Wire: Decodable {
        var id: String?
        var project: String?
        var type: String?
        var createdAt: String?
        var expiresAt: String?
        var locale: String?
        var idempotencyKey: String?
        var to: String?
        var template: String?
        var params: [String: String]?
        var deviceToken: String?
        var environment: String?
        var topic: String?
        var payload: [String: String]?
        var action: String?
        var user: String?
        var clientId: String?
        var redirectUri: String?
    }

    /// The body, keys sorted (the same bytes for the same job).
    public static func encode(_ job: Job) -> Data {
        var fields: [(key: String, value: JSONWriter.Value?)] = [
            ("id", .string(job.id.uuidString.lowercased())), ("project", .string(job.project)), ("type", .string(job.type.rawValue)),
            ("createdAt", .string(Timestamp.format(job.createdAt))), ("expiresAt", .string(Timestamp.format(job.expiresAt))),
            ("locale", job.locale.map { .string($0) }), ("idempotencyKey", .string(job.idempotencyKey)),
        ]
        switch job.payload {
        case .sms(let message):
            fields += [("to", .string(message.to)), ("template", .string(message.template.rawValue)), ("params", .strings(message.params))]
        case .email(let message):
            fields += [("to", .string(message.to)), ("template", .string(message.template.rawValue)), ("params", .strings(message.params))]
        case .push(let message):
            fields += [
                ("deviceToken", .string(message.deviceToken)), ("environment", .string(message.environment.rawValue)),
                ("topic", .string(message.topic)), ("payload", .strings(message.payload)),
            ]
        case .apple(let message):
            fields += [
                ("action", .string(message.action.rawValue)), ("user", .string(message.user)), ("clientId", .string(message.clientId)),
                ("redirectUri", message.redirectUri.map { .string($0) }), ("params", .strings(message.params)),
            ]
        }
        var writer = JSONWriter()
        writer.object(fields)
        return Data(writer.bytes)
    }

    public static func decode(_ data: Data) throws(DecodingError) -> Job {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: data)
        } catch {
            throw DecodingError(field: "body", problem: "not a JSON object of the job schema")
        }
        func required(_ value: String?, _ field: String) throws(DecodingError) -> String {
            guard let value, value.isEmpty == false else { throw DecodingError(field: field, problem: "missing") }
            return value
        }
        guard let id = UUID(uuidString: try required(wire.id, "id")) else {
            throw DecodingError(field: "id", problem: "not a UUID")
        }
        let project = try required(wire.project, "project")
        guard let createdAt = Timestamp.parse(try required(wire.createdAt, "createdAt")) else {
            throw DecodingError(field: "createdAt", problem: "not an RFC 3339 timestamp")
        }
        guard let expiresAt = Timestamp.parse(try required(wire.expiresAt, "expiresAt")) else {
            throw DecodingError(field: "expiresAt", problem: "not an RFC 3339 timestamp")
        }
        let typeName = try required(wire.type, "type")
        let payload: Job.Payload
        switch JobType(rawValue: typeName) {
        case .sms:
            let to = try required(wire.to, "to")
            guard let number = try? PhoneNumber(parsing: to), number.e164 == to else {
                throw DecodingError(field: "to", problem: "not an E.164 phone number")
            }
            guard let template = SMSMessage.Template(rawValue: try required(wire.template, "template")) else {
                throw DecodingError(
                    field: "template",
                    problem: "unknown (expected \(SMSMessage.Template.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            payload = .sms(SMSMessage(to: to, template: template, params: wire.params ?? [:]))
        case .push:
            let token = try required(wire.deviceToken, "deviceToken")
            guard token.count >= 32, token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else {
                throw DecodingError(field: "deviceToken", problem: "not a hex APNs device token")
            }
            guard let environment = PushMessage.Environment(rawValue: try required(wire.environment, "environment")) else {
                throw DecodingError(field: "environment", problem: "must be sandbox or production")
            }
            payload = .push(
                PushMessage(
                    deviceToken: token.lowercased(), environment: environment, topic: try required(wire.topic, "topic"), payload: wire.payload ?? [:])
            )
        case .email:
            guard let to = EmailAddress(try required(wire.to, "to")) else {
                throw DecodingError(field: "to", problem: "not an email address")
            }
            guard let template = EmailMessage.Template(rawValue: try required(wire.template, "template")) else {
                throw DecodingError(
                    field: "template",
                    problem: "unknown (expected \(EmailMessage.Template.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            payload = .email(EmailMessage(to: to.value, template: template, params: wire.params ?? [:]))
        case .apple:
            guard let action = AppleMessage.Action(rawValue: try required(wire.action, "action")) else {
                throw DecodingError(field: "action", problem: "unknown (expected revoke)")
            }
            let params = wire.params ?? [:]
            guard params["authorizationCodeSealed"] != nil || params["refreshTokenSealed"] != nil else {
                throw DecodingError(field: "params", problem: "needs authorizationCodeSealed or refreshTokenSealed")
            }
            payload = .apple(
                AppleMessage(
                    action: action, user: try required(wire.user, "user"), clientId: try required(wire.clientId, "clientId"),
                    redirectUri: wire.redirectUri, params: params))
        case nil:
            throw DecodingError(field: "type", problem: "unknown job type '\(typeName)'")
        }
        return Job(
            id: id, project: project, createdAt: createdAt, expiresAt: expiresAt, locale: wire.locale,
            idempotencyKey: wire.idempotencyKey ?? id.uuidString.lowercased(), payload: payload)
    }
}
