import Foundation
import HeraldCurl
import Logging

/// RabbitMQ's management HTTP API, for what AMQP cannot tell: messages delivered to consumers and not
/// yet acknowledged (`queue.declare-ok` counts only ready ones), and who the consumers are. Asked with
/// the AMQP user's credentials (`amqp.managementUrl`; the user needs the `monitoring` tag or better).
public struct BrokerManagement: Sendable {
    let baseURL: String
    let endpoint: AMQPEndpoint
    let client: CurlClient

    public struct QueueFigures: Sendable {
        public var ready: Int
        public var unacknowledged: Int
        public var consumers: Int
    }

    /// One consumer of a queue: its connection's name (a worker's names its type and instance), where
    /// it connects from, and what its channel holds unacknowledged.
    public struct Consumer: Sendable, Equatable {
        public var connectionName: String
        public var peer: String
        public var prefetch: Int
        /// nil when the broker has no statistics for the channel yet.
        public var unacknowledged: Int?
    }

    public init(baseURL: String, endpoint: AMQPEndpoint, client: CurlClient? = nil) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.endpoint = endpoint
        self.client = client ?? CurlClient(logger: Logger(label: "broker-management"))
    }

    /// `GET /api/queues/<vhost>/<queue>`; nil when the API does not know the queue, throws when it cannot be asked.
    public func queue(_ name: String) async throws -> QueueFigures? {
        guard let object = try await get("/api/queues/\(Self.segment(endpoint.virtualHost))/\(Self.segment(name))") as? [String: Any] else {
            return nil
        }
        // Fresh queues report no message counts until their first statistics tick.
        return QueueFigures(
            ready: object["messages_ready"] as? Int ?? 0, unacknowledged: object["messages_unacknowledged"] as? Int ?? 0,
            consumers: object["consumers"] as? Int ?? 0)
    }

    /// Every consumer of `queue` with its channel's unacknowledged count (the queue's
    /// `consumer_details`, joined with the vhost's channels by name); nil when the API does not know
    /// the queue.
    public func consumers(of queue: String) async throws -> [Consumer]? {
        let vhost = Self.segment(endpoint.virtualHost)
        guard let object = try await get("/api/queues/\(vhost)/\(Self.segment(queue))") as? [String: Any] else { return nil }
        let details = object["consumer_details"] as? [[String: Any]] ?? []
        let channels = try await get("/api/vhosts/\(vhost)/channels") as? [[String: Any]] ?? []
        var unacked: [String: Int] = [:]
        for channel in channels {
            if let name = channel["name"] as? String, let count = channel["messages_unacknowledged"] as? Int { unacked[name] = count }
        }
        // A consumer's channel names its connection by address; the name the client gave is the connection's.
        let connections = try await get("/api/vhosts/\(vhost)/connections") as? [[String: Any]] ?? []
        var given: [String: String] = [:]
        for connection in connections {
            guard let name = connection["name"] as? String else { continue }
            let properties = connection["client_properties"] as? [String: Any]
            if let provided = connection["user_provided_name"] as? String ?? properties?["connection_name"] as? String { given[name] = provided }
        }
        return details.map { consumer in
            let channel = consumer["channel_details"] as? [String: Any] ?? [:]
            let name = channel["name"] as? String ?? ""
            let host = channel["peer_host"] as? String ?? "?"
            let port = (channel["peer_port"] as? Int).map(String.init) ?? "?"
            let connection = channel["connection_name"] as? String ?? "?"
            return Consumer(
                connectionName: given[connection] ?? connection, peer: "\(host):\(port)",
                prefetch: consumer["prefetch_count"] as? Int ?? 0, unacknowledged: unacked[name])
        }
    }

    /// The JSON at `path`; nil for 404.
    private func get(_ path: String) async throws -> Any? {
        let credentials = Data("\(endpoint.user):\(endpoint.password)".utf8).base64EncodedString()
        let response = try await client.perform(
            CurlHTTPRequest(method: "GET", url: baseURL + path, headers: [("Authorization", "Basic \(credentials)")], body: nil, timeout: .seconds(5))
        )
        if response.status == 404 { return nil }
        guard response.status == 200, let object = try? JSONSerialization.jsonObject(with: response.body) else {
            throw ManagementError(description: "the management API answered HTTP \(response.status) for \(path)")
        }
        return object
    }

    public struct ManagementError: Error, CustomStringConvertible {
        public var description: String
    }

    /// A path segment: everything but unreserved characters percent-encoded (`/` as a vhost is `%2F`).
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"))
            ?? text
    }
}
