import Foundation

/// An outbound HTTP request.
public struct CurlHTTPRequest: Sendable {
    /// Which protocol to speak.
    public enum Version: Sendable {
        /// HTTP/1.1 (SMS gateways, captcha verification).
        case http1_1
        /// HTTP/2 over TLS, multiplexed on pooled connections (APNs).
        case http2
        /// HTTP/2 without TLS (`h2c` prior knowledge; test servers only).
        case http2PriorKnowledge
    }

    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: Data?
    /// The whole transfer, including waiting for a pooled connection.
    public var timeout: Duration
    public var connectTimeout: Duration
    public var version: Version
    /// Extra CA bundle (PEM) to trust, for private gateways and test servers.
    public var caFile: String?

    public init(
        method: String = "POST", url: String, headers: [(name: String, value: String)] = [], body: Data? = nil,
        timeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(5), version: Version = .http1_1,
        caFile: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.version = version
        self.caFile = caFile
    }
}

/// A completed HTTP exchange (any status: the caller decides what a status means).
public struct CurlHTTPResponse: Sendable {
    public var status: Int
    /// Response headers of the final response, names lower-cased.
    public var headers: [(name: String, value: String)]
    public var body: Data
    /// 11 for HTTP/1.1, 20 for HTTP/2.
    public var httpVersion: Int
    /// `Retry-After` as libcurl parsed it (delta seconds or HTTP date).
    public var retryAfter: Duration?
    /// The transfer ran on a pooled connection rather than opening one (`CURLINFO_NUM_CONNECTS` 0).
    public var connectionReused = false

    /// The first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name == lower }?.value
    }
}

/// A transport failure: no HTTP response was received.
public struct CurlError: Error, Sendable, CustomStringConvertible {
    /// What happened, in the terms a retry policy needs.
    public enum Kind: Sendable, Equatable {
        /// DNS, TCP connect or TLS handshake failed: the request was never sent, retrying is safe.
        case couldNotConnect
        /// The request was (at least partly) sent and then the transfer broke or timed out: the server
        /// may have acted on it.
        case failedAfterSending
        /// Timed out before anything was sent.
        case timedOutBeforeSending
        /// The caller cancelled it before anything was sent.
        case cancelledBeforeSending
        /// TLS verification or local configuration problem (bad CA file, bad certificate).
        case configuration
        /// Anything else libcurl reported.
        case other
    }

    public var kind: Kind
    /// The `CURLcode`.
    public var code: Int
    public var message: String

    public var description: String { "curl error \(code) (\(kind)): \(message)" }
}

/// One message to submit over SMTP.
public struct CurlMailRequest: Sendable {
    /// `smtp://host:port/<ehlo-name>` or `smtps://host:port/<ehlo-name>`: libcurl takes the EHLO name
    /// from the path (without one it would send the container's hostname).
    public var url: String
    /// Envelope sender (MAIL FROM): where bounces go.
    public var mailFrom: String
    public var recipients: [String]
    /// The complete RFC 5322 message, CRLF line endings; libcurl dot-stuffs it and ends DATA itself.
    public var message: Data
    public var username: String?
    public var password: String?
    /// STARTTLS or fail (never a silent downgrade to plain text).
    public var requireTLS: Bool
    public var caFile: String?
    public var timeout: Duration
    public var connectTimeout: Duration

    public init(
        url: String, mailFrom: String, recipients: [String], message: Data, username: String? = nil, password: String? = nil,
        requireTLS: Bool = false, caFile: String? = nil, timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10)
    ) {
        self.url = url
        self.mailFrom = mailFrom
        self.recipients = recipients
        self.message = message
        self.username = username
        self.password = password
        self.requireTLS = requireTLS
        self.caFile = caFile
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }
}

/// How an SMTP submission ended.
public struct CurlMailReply: Sendable, Equatable {
    /// The `CURLcode` (0 = accepted).
    public var curlCode: Int
    /// The last SMTP reply code (250 after a successful DATA; 4xx/5xx when refused; 0 when the
    /// connection failed before any reply).
    public var replyCode: Int
    /// Every reply line the server sent, in order (enhanced status codes included).
    public var replyLines: [String]
    /// libcurl's error text, nil when accepted.
    public var error: String?
    /// Part of the message had been handed to the server: a failure now may still have delivered it.
    public var messageStarted: Bool

    public init(curlCode: Int, replyCode: Int, replyLines: [String], error: String?, messageStarted: Bool) {
        self.curlCode = curlCode
        self.replyCode = replyCode
        self.replyLines = replyLines
        self.error = error
        self.messageStarted = messageStarted
    }

    /// The last reply line starting with the final reply code (what to show an operator).
    public var lastReply: String? {
        replyLines.last { replyCode > 0 && $0.hasPrefix(String(replyCode)) } ?? replyLines.last
    }
}
