import Foundation

/// A message as the admin API and `herald-admin messages … --json` show it: exactly these keys, null
/// where unknown, the destination masked, instants in RFC 3339 (UTC, milliseconds). Which producer
/// published a job is the first event's detail ("accepted from <producer>").
public struct MessageView: Encodable, Sendable {
    public let record: MessageRecord

    public init(_ record: MessageRecord) { self.record = record }

    enum Key: String, CodingKey {
        case id, project, type, to, template, locale, status, attempts, provider, providerMessageId, segments, encoding, lastError
        case createdAt, updatedAt, events
        case at, detail
    }

    public static let keys = [
        "id", "project", "type", "to", "template", "locale", "status", "attempts", "provider", "providerMessageId", "segments",
        "encoding", "lastError", "createdAt", "updatedAt", "events",
    ]

    public func encode(to encoder: any Encoder) throws {
        var object = encoder.container(keyedBy: Key.self)
        try object.encode(record.id.lowercasedText, forKey: .id)
        try object.encode(record.project, forKey: .project)
        try object.encode(record.type.rawValue, forKey: .type)
        try object.encode(record.maskedDestination, forKey: .to)
        try object.encode(record.template, forKey: .template)
        try object.encode(record.locale, forKey: .locale)
        try object.encode(record.publicStatus.rawValue, forKey: .status)
        try object.encode(record.attempts, forKey: .attempts)
        try object.encode(record.provider, forKey: .provider)
        try object.encode(record.providerMessageID, forKey: .providerMessageId)
        try object.encode(record.segments, forKey: .segments)
        try object.encode(record.encoding, forKey: .encoding)
        try object.encode(record.lastError, forKey: .lastError)
        try object.encode(Self.timestamp(record.createdAt), forKey: .createdAt)
        try object.encode(Self.timestamp(record.updatedAt), forKey: .updatedAt)
        var events = object.nestedUnkeyedContainer(forKey: .events)
        for event in record.events {
            var entry = events.nestedContainer(keyedBy: Key.self)
            try entry.encode(event.status.rawValue, forKey: .status)
            try entry.encode(Self.timestamp(event.at), forKey: .at)
            try entry.encode(event.detail, forKey: .detail)
        }
    }

    /// RFC 3339 in UTC with milliseconds: `2026-11-24T18:43:01.123Z`.
    public static func timestamp(_ date: Date) -> String { Timestamp.format(date) }

    /// One message as a JSON object.
    public static func json(_ record: MessageRecord) -> Data {
        (try? encoder.encode(MessageView(record))) ?? Data("{}".utf8)
    }

    /// A page as `{"messages": [...], "nextPageToken": "…"}` (the token only when more follow).
    public static func json(_ page: MessagePage) -> Data {
        struct Page: Encodable {
            var messages: [MessageView]
            var nextPageToken: String?
        }
        return (try? encoder.encode(Page(messages: page.messages.map(MessageView.init), nextPageToken: page.next?.token))) ?? Data("{}".utf8)
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension MessageQuery {
    /// A listing's filters as the admin API and `herald-admin messages list` take them: `to` (the full
    /// E.164 number or address), `status` (public statuses, comma-separated), `type`, `project`,
    /// `since` (RFC 3339 or a duration back from `now`, like `1h`), `pageSize` (1–500, default 50) and
    /// `pageToken`. Throws `INVALID_ARGUMENT` naming the parameter that is wrong.
    public static func parse(
        to: String?, status: String?, type: String?, project: String?, since: String?, pageSize: String?, pageToken: String?, now: Date
    ) throws -> MessageQuery {
        func invalid(_ message: String) -> HeraldError { HeraldError(.invalidArgument, message) }
        var query = MessageQuery()
        if let to, to.isEmpty == false { query.to = to }
        if let status, status.isEmpty == false {
            var stored: [DeliveryStatus] = []
            for name in status.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                guard let parsed = MessageStatus(rawValue: name) else {
                    throw invalid("status must be one of \(MessageStatus.allCases.map(\.rawValue).joined(separator: ", ")) (got \(name.prefix(40)))")
                }
                stored += parsed.stored
            }
            query.statuses = stored
        }
        if let type, type.isEmpty == false {
            guard let parsed = JobType(rawValue: type) else {
                throw invalid("type must be one of \(JobType.allCases.map(\.rawValue).joined(separator: ", ")) (got \(type.prefix(40)))")
            }
            query.type = parsed
        }
        if let project, project.isEmpty == false { query.project = project }
        if let since, since.isEmpty == false {
            if let duration = DurationText.parse(since) {
                query.since = now.addingTimeInterval(-Double(duration.components.seconds))
            } else if let date = Timestamp.parse(since) {
                query.since = date
            } else {
                throw invalid("since must be an RFC 3339 instant (2026-11-24T10:00:00Z) or a duration back from now (1h) (got \(since.prefix(40)))")
            }
        }
        if let pageSize, pageSize.isEmpty == false {
            guard let size = Int(pageSize), (1...MessageQuery.maximumPageSize).contains(size) else {
                throw invalid("pageSize must be between 1 and \(MessageQuery.maximumPageSize) (got \(pageSize.prefix(20)))")
            }
            query.pageSize = size
        }
        if let pageToken, pageToken.isEmpty == false {
            guard let cursor = MessageCursor(token: pageToken) else { throw invalid("pageToken is not one this API handed out") }
            query.after = cursor
        }
        return query
    }
}
