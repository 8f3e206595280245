import HeraldCore

/// The parts of an `amqp://user:pass@host:port/vhost` or `amqps://…` URL (vhost percent-decoded,
/// `%2f` = `/`; default port 5672, or 5671 with TLS).
public struct AMQPEndpoint: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var virtualHost: String
    public var user: String
    public var password: String
    /// `amqps://`: TLS, with the settings of `amqp.tls`.
    public var tls: Bool

    /// Parses `url`; nil when it is not an `amqp://` or `amqps://` URL.
    public init?(url: String) {
        guard let parsed = ServerURL(url), parsed.scheme == "amqp" || parsed.scheme == "amqps", parsed.queryItems.isEmpty
        else { return nil }
        let tls = parsed.scheme == "amqps"
        self.tls = tls
        self.host = parsed.host
        self.port = parsed.port ?? (tls ? 5671 : 5672)
        self.user = parsed.user ?? "guest"
        self.password = parsed.password ?? "guest"
        let path = parsed.percentEncodedPath
        if path.isEmpty || path == "/" {
            self.virtualHost = "/"
        } else {
            guard let decoded = ServerURL.percentDecoded(path.dropFirst()) else { return nil }
            self.virtualHost = decoded
        }
    }

    /// The URL with the password replaced, for logs.
    public var redacted: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let vhost = virtualHost.split(separator: "/", omittingEmptySubsequences: false).joined(separator: "%2f")
        return "\(tls ? "amqps" : "amqp")://\(user):***@\(host):\(port)/\(vhost)"
    }
}
