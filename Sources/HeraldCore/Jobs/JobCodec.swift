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
    ///
    /// Written member by member: the payload's own members in key order, each after the common members
    /// that sort before it (`CommonMembers`). Lists of members built and merged first, then freed with
    /// every value in them, were about a fifth of this (every send's job).
    public static func encode(_ job: Job) -> Data {
        var writer = JSONWriter()
        writer.beginObject()
        var common = CommonMembers(job: job)
        func member(_ key: StaticString, _ value: JSONWriter.Value?) {
            common.write(before: key, into: &writer)
            writer.member(key, value)
        }
        switch job.payload {
        case .sms(let message):
            member("params", .strings(message.params))
            member("template", .string(message.template.rawValue))
            member("to", .string(message.to))
        case .email(let message):
            member("params", .strings(message.params))
            member("template", .string(message.template.rawValue))
            member("to", .string(message.to))
        case .push(let message):
            member("deviceToken", .string(message.deviceToken))
            member("environment", .string(message.environment.rawValue))
            member("payload", .strings(message.payload))
            member("topic", .string(message.topic))
        case .apple(let message):
            member("action", .string(message.action.rawValue))
            member("clientId", .string(message.clientId))
            member("params", .strings(message.params))
            member("redirectUri", message.redirectUri.map { .string($0) })
            member("user", .string(message.user))
        }
        common.write(before: nil, into: &writer)
        writer.endObject()
        return writer.data
    }

    /// The members every job has, in key order, written as the payload's members come past them.
    private struct CommonMembers {
        static let keys: [StaticString] = ["createdAt", "expiresAt", "id", "idempotencyKey", "locale", "project", "type"]
        let job: Job
        var next = 0

        /// Writes the common members that sort before `key` (all that are left when nil).
        mutating func write(before key: StaticString?, into writer: inout JSONWriter) {
            while next < Self.keys.count, key.map({ Self.precedes(Self.keys[next], $0) }) ?? true {
                let name = Self.keys[next]
                switch next {
                case 0: writer.member(name, .string(Timestamp.format(job.createdAt)))
                case 1: writer.member(name, .string(Timestamp.format(job.expiresAt)))
                case 2: writer.member(name, .string(job.id.lowercasedText))
                case 3: writer.member(name, .string(job.idempotencyKey))
                case 4: writer.member(name, job.locale.map { .string($0) })
                case 5: writer.member(name, .string(job.project))
                default: writer.member(name, .string(job.type.rawValue))
                }
                next += 1
            }
        }

        /// Whether ASCII key `first` sorts before `second`, as `String`'s `<` orders them.
        static func precedes(_ first: StaticString, _ second: StaticString) -> Bool {
            first.withUTF8Buffer { a in second.withUTF8Buffer { b in a.lexicographicallyPrecedes(b) } }
        }
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
