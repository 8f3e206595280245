import Foundation

/// The parts of an `amqp://user:pass@host:port/vhost` URL (vhost percent-decoded, `%2f` = `/`).
public struct AMQPEndpoint: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var virtualHost: String
    public var user: String
    public var password: String

    /// Parses `url`; nil when it is not a plain `amqp://` URL (TLS `amqps://` is not supported yet).
    public init?(url: String) {
        guard url.hasPrefix("amqp://"), let components = URLComponents(string: url), let host = components.host,
            host.isEmpty == false
        else { return nil }
        self.host = host
        self.port = components.port ?? 5672
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
    public var redacted: String { "amqp://\(user):***@\(host):\(port)/\(virtualHost == "/" ? "%2f" : virtualHost)" }
}
