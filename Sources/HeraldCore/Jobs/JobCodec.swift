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

    /// The body's fields as JSON has them (all optional: `decode` names what is missing).
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

        /// Sets the text field `name`; false when the body has no text field of that name.
        mutating func setText(_ name: String, _ text: String) -> Bool {
            switch name {
            case "id": id = text
            case "project": project = text
            case "type": type = text
            case "createdAt": createdAt = text
            case "expiresAt": expiresAt = text
            case "locale": locale = text
            case "idempotencyKey": idempotencyKey = text
            case "to": to = text
            case "template": template = text
            case "deviceToken": deviceToken = text
            case "environment": environment = text
            case "topic": topic = text
            case "action": action = text
            case "user": user = text
            case "clientId": clientId = text
            case "redirectUri": redirectUri = text
            default: return false
            }
            return true
        }

        static func isText(_ name: String) -> Bool {
            var probe = Wire()
            return probe.setText(name, "")
        }
    }

    /// The body read by `JSONObjectReader`, or by `JSONDecoder` for anything that reader leaves (other
    /// value types, duplicate names, malformed JSON), which then also names the refusal.
    private static func wire(_ data: Data) -> Wire? {
        guard let members = JSONObjectReader.read(Array(data)) else { return nil }
        var wire = Wire()
        for (name, value) in members {
            switch value {
            case .null: continue
            case .strings(let map) where name == "params": wire.params = map
            case .strings(let map) where name == "payload": wire.payload = map
            case .string(let text):
                // A text where an object belongs is JSONDecoder's to refuse; an unknown name is ignored, as it ignores it.
                if wire.setText(name, text) == false, name == "params" || name == "payload" { return nil }
            case .strings:
                // An object where a text belongs: JSONDecoder's to refuse.
                if Wire.isText(name) { return nil }
            }
        }
        return wire
    }

    /// The body, keys sorted (the same bytes for the same job).
    public static func encode(_ job: Job) -> Data {
        // Both lists in key order, merged in key order: `JSONWriter` then writes the object as it is
        // instead of sorting a copy of it (every send's job).
        let common: [(key: String, value: JSONWriter.Value?)] = [
            ("createdAt", .string(Timestamp.format(job.createdAt))), ("expiresAt", .string(Timestamp.format(job.expiresAt))),
            ("id", .string(job.id.lowercasedText)), ("idempotencyKey", .string(job.idempotencyKey)),
            ("locale", job.locale.map { .string($0) }), ("project", .string(job.project)), ("type", .string(job.type.rawValue)),
        ]
        let specific: [(key: String, value: JSONWriter.Value?)]
        switch job.payload {
        case .sms(let message):
            specific = [("params", .strings(message.params)), ("template", .string(message.template.rawValue)), ("to", .string(message.to))]
        case .email(let message):
            specific = [("params", .strings(message.params)), ("template", .string(message.template.rawValue)), ("to", .string(message.to))]
        case .push(let message):
            specific = [
                ("deviceToken", .string(message.deviceToken)), ("environment", .string(message.environment.rawValue)),
                ("payload", .strings(message.payload)), ("topic", .string(message.topic)),
            ]
        case .apple(let message):
            specific = [
                ("action", .string(message.action.rawValue)), ("clientId", .string(message.clientId)), ("params", .strings(message.params)),
                ("redirectUri", message.redirectUri.map { .string($0) }), ("user", .string(message.user)),
            ]
        }
        var fields: [(key: String, value: JSONWriter.Value?)] = []
        fields.reserveCapacity(common.count + specific.count)
        var (left, right) = (0, 0)
        while left < common.count || right < specific.count {
            if right == specific.count || (left < common.count && common[left].key < specific[right].key) {
                fields.append(common[left])
                left += 1
            } else {
                fields.append(specific[right])
                right += 1
            }
        }
        // Debug builds (the tests) check the merge: the writer would sort a misordered list silently.
        assert(fields.indices.dropFirst().allSatisfy { fields[$0 - 1].key < fields[$0].key }, "job fields out of key order")
        var writer = JSONWriter()
        writer.object(fields)
        return Data(writer.bytes)
    }

    public static func decode(_ data: Data) throws(DecodingError) -> Job {
        try decode(data, fastPath: true)
    }

    /// `fastPath: false` reads with `JSONDecoder` only (tests compare the two).
    static func decode(_ data: Data, fastPath: Bool) throws(DecodingError) -> Job {
        let wire: Wire
        if fastPath, let fast = Self.wire(data) {
            wire = fast
        } else {
            do {
                wire = try JSONDecoder().decode(Wire.self, from: data)
            } catch {
                throw DecodingError(field: "body", problem: "not a JSON object of the job schema")
            }
        }
        func required(_ value: String?, _ field: String) throws(DecodingError) -> String {
            guard let value, value.isEmpty == false else { throw DecodingError(field: field, problem: "missing") }
            return value
        }
        guard let id = UUID(parsing: try required(wire.id, "id")) else {
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
            idempotencyKey: wire.idempotencyKey ?? id.lowercasedText, payload: payload)
    }
}
