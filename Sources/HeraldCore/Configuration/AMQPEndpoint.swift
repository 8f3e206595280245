import Foundation

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
        let tls = url.hasPrefix("amqps://")
        guard tls || url.hasPrefix("amqp://"), let components = URLComponents(string: url), let host = components.host,
            host.isEmpty == false
        else { return nil }
        self.tls = tls
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = components.port ?? (tls ? 5671 : 5672)
        self.user = components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? "guest"
        self.password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding } ?? "guest"
        let path = components.percentEncodedPath
        if path.isEmpty || path == "/" {
            self.virtualHost = "/"
        } else {
            guard let decoded = String(path.dropFirst()).removingPercentEncoding else { return nil }
            self.virtualHost = decoded
        }
    }

    /// The URL with the password replaced, for logs.
    public var redacted: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "\(tls ? "amqps" : "amqp")://\(user):***@\(host):\(port)/\(virtualHost == "/" ? "%2f" : virtualHost)"
    }
}
