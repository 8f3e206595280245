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
