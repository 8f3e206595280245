import Foundation

/// A message's status as operators see it (the message status API, `herald-admin messages`, the status
/// page). The ledger keeps `DeliveryStatus`, the workers' vocabulary; this is the public one:
/// pending and retrying are both `queued` (the events say which attempt failed), a job the API could
/// not get confirmed (abandoned) is `failed`. `duplicate-skipped` is only ever an event: a copy of a
/// finished job that a worker acknowledged without sending, which must not hide the job's real status.
public enum MessageStatus: String, Sendable, CaseIterable, Codable {
    case queued, throttled, sending, sent, delivered, undelivered, failed, dead, expired, uncertain
    case duplicateSkipped = "duplicate-skipped"

    public init(_ stored: DeliveryStatus) {
        switch stored {
        case .pending, .retrying: self = .queued
        case .throttled: self = .throttled
        case .sending: self = .sending
        case .sent: self = .sent
        case .delivered: self = .delivered
        case .undelivered: self = .undelivered
        case .failed, .abandoned: self = .failed
        case .dead: self = .dead
        case .expired: self = .expired
        case .uncertain: self = .uncertain
        }
    }

    /// The stored statuses a filter on this status matches (none for `duplicate-skipped`).
    public var stored: [DeliveryStatus] { DeliveryStatus.allCases.filter { MessageStatus($0) == self } }
}

/// One transition of a message, oldest first in `MessageRecord.events`.
public struct MessageEvent: Sendable, Equatable {
    public var status: MessageStatus
    public var at: Date
    /// What happened, for operators: an attempt number, a provider's error, a throttle's wait. Never a
    /// code or a message body (the ledger gets only what the lifecycle and receipts say).
    public var detail: String?

    public init(status: MessageStatus, at: Date, detail: String?) {
        self.status = status
        self.at = at
        self.detail = detail
    }

    /// Longest detail kept; a provider's error body can be long.
    static let detailLimit = 300

    /// The line appended to the ledger row's `events` column: `<ms>\t<status>\t<detail>\n`, the detail
    /// with tabs and line breaks flattened, so appending is one string concatenation in SQL.
    public var storedLine: String {
        let detail = detail ?? ""
        // Most details are short and single-line ("attempt 1"): kept as they are, without walking their
        // Characters (a detail of at most `detailLimit` bytes has at most that many Characters).
        let flat =
            detail.utf8.count <= Self.detailLimit && detail.utf8.contains(where: { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) == false
            ? detail : Self.flattened(detail)
        return "\(Int64((at.timeIntervalSince1970 * 1000).rounded(.down)))\t\(status.rawValue)\t\(flat)\n"
    }

    /// `detail` on one line, at most `detailLimit` Characters. By scalars: "\r\n" is one Character,
    /// equal to neither "\r" nor "\n", and went through whole when this compared Characters.
    static func flattened(_ detail: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in detail.unicodeScalars {
            scalars.append(scalar == "\t" || scalar == "\n" || scalar == "\r" ? " " : scalar)
        }
        return String(String(scalars).prefix(detailLimit))
    }

    /// The events of a stored `events` column (lines that do not parse are skipped).
    public static func parse(_ stored: String?) -> [MessageEvent] {
        guard let stored else { return [] }
        return stored.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count >= 2, let ms = Int64(fields[0]), let status = MessageStatus(rawValue: String(fields[1])) else { return nil }
            let detail = fields.count == 3 && fields[2].isEmpty == false ? String(fields[2]) : nil
            return MessageEvent(status: status, at: Date(timeIntervalSince1970: Double(ms) / 1000), detail: detail)
        }
    }
}

/// What a worker knows about a job when it claims it, kept on the ledger row for operators.
public struct DeliveryDescription: Sendable, Equatable {
    public var template: String?
    public var locale: String?
    /// The provider the worker sends through (`http`, `console`, `smtp`, `apns`).
    public var provider: String?
    /// The foreign producer that published the job (an `integrations.producers` id); nil for herald-api.
    public var producer: String?

    public init(template: String? = nil, locale: String? = nil, provider: String? = nil, producer: String? = nil) {
        self.template = template
        self.locale = locale
        self.provider = provider
        self.producer = producer
    }
}

/// One message as the ledger holds it.
public struct MessageRecord: Sendable, Equatable {
    public var id: UUID
    public var project: String
    public var type: JobType
    /// The full destination (a phone number, an address, a token's hash); masked when shown.
    public var destination: String
    public var template: String?
    public var locale: String?
    public var status: DeliveryStatus
    public var attempts: Int
    public var provider: String?
    public var providerMessageID: String?
    public var producer: String?
    public var segments: Int?
    public var encoding: String?
    public var lastError: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// Every transition after the first: the ledger stores `queued` at `createdAt` implicitly.
    public var storedEvents: [MessageEvent]

    public init(
        id: UUID, project: String, type: JobType, destination: String, template: String?, locale: String?, status: DeliveryStatus,
        attempts: Int, provider: String?, providerMessageID: String?, producer: String?, segments: Int?, encoding: String?,
        lastError: String?, createdAt: Date, updatedAt: Date, storedEvents: [MessageEvent]
    ) {
        self.id = id
        self.project = project
        self.type = type
        self.destination = destination
        self.template = template
        self.locale = locale
        self.status = status
        self.attempts = attempts
        self.provider = provider
        self.providerMessageID = providerMessageID
        self.producer = producer
        self.segments = segments
        self.encoding = encoding
        self.lastError = lastError
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.storedEvents = storedEvents
    }

    public var publicStatus: MessageStatus { MessageStatus(status) }

    /// Every transition, oldest first, starting with `queued` when the API recorded the job.
    public var events: [MessageEvent] {
        [MessageEvent(status: .queued, at: createdAt, detail: producer.map { "accepted from \($0)" })] + storedEvents
    }

    /// The destination as listings show it.
    public var maskedDestination: String { MaskedDestination.mask(destination, type: type) }
}

/// A listing's filters (all optional) and its page.
public struct MessageQuery: Sendable, Equatable {
    /// The full destination (`+447700900123`, `alice@example.com`).
    public var to: String?
    public var statuses: [DeliveryStatus]?
    public var type: JobType?
    public var project: String?
    public var since: Date?
    public var pageSize: Int
    public var after: MessageCursor?

    public static let maximumPageSize = 500
    public static let defaultPageSize = 50

    public init(
        to: String? = nil, statuses: [DeliveryStatus]? = nil, type: JobType? = nil, project: String? = nil, since: Date? = nil,
        pageSize: Int = MessageQuery.defaultPageSize, after: MessageCursor? = nil
    ) {
        self.to = to
        self.statuses = statuses
        self.type = type
        self.project = project
        self.since = since
        self.after = after
        self.pageSize = min(max(1, pageSize), Self.maximumPageSize)
    }
}

/// Where a page ended: listings run newest first by (created, id), so the next page starts strictly
/// after the last row shown. Opaque to callers (`token`): base64url of `<ms>:<id>`.
public struct MessageCursor: Sendable, Equatable {
    public var createdMs: Int64
    public var id: String

    public init(createdMs: Int64, id: String) {
        self.createdMs = createdMs
        self.id = id
    }

    public var token: String {
        Data("\(createdMs):\(id)".utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    public init?(token: String) {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard token.count <= 128, let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":"), let ms = Int64(text[..<colon]), UUID(parsing: String(text[text.index(after: colon)...])) != nil
        else { return nil }
        self.init(createdMs: ms, id: String(text[text.index(after: colon)...]))
    }
}

/// One page of a listing, newest first.
public struct MessagePage: Sendable, Equatable {
    public var messages: [MessageRecord]
    /// Set when more rows may follow.
    public var next: MessageCursor?

    public init(messages: [MessageRecord], next: MessageCursor?) {
        self.messages = messages
        self.next = next
    }
}
