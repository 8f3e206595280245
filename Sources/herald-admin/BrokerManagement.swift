import Foundation
import HeraldAMQP
import HeraldCore
import HeraldCurl
import Logging

/// RabbitMQ's management HTTP API, for the one figure AMQP cannot give: messages delivered to consumers
/// and not yet acknowledged (`queue.declare-ok` counts only ready ones). Asked with the AMQP user's
/// credentials (`amqp.managementUrl`; the user needs the `monitoring` tag or better).
struct BrokerManagement {
    let baseURL: String
    let endpoint: AMQPEndpoint
    let client: CurlClient

    struct QueueFigures {
        var ready: Int
        var unacknowledged: Int
        var consumers: Int
    }

    init(baseURL: String, endpoint: AMQPEndpoint) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.endpoint = endpoint
        self.client = CurlClient(logger: Logger(label: "herald-admin"))
    }

    /// `GET /api/queues/<vhost>/<queue>`; nil when the API does not know the queue, throws when it cannot be asked.
    func queue(_ name: String) async throws -> QueueFigures? {
        let path = "/api/queues/\(Self.segment(endpoint.virtualHost))/\(Self.segment(name))"
        let credentials = Data("\(endpoint.user):\(endpoint.password)".utf8).base64EncodedString()
        let response = try await client.perform(
            CurlHTTPRequest(method: "GET", url: baseURL + path, headers: [("Authorization", "Basic \(credentials)")], body: nil, timeout: .seconds(5))
        )
        if response.status == 404 { return nil }
        guard response.status == 200, let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] else {
            throw ManagementError(description: "the management API answered HTTP \(response.status) for \(path)")
        }
        // Fresh queues report no message counts until their first statistics tick.
        return QueueFigures(
            ready: object["messages_ready"] as? Int ?? 0, unacknowledged: object["messages_unacknowledged"] as? Int ?? 0,
            consumers: object["consumers"] as? Int ?? 0)
    }

    struct ManagementError: Error, CustomStringConvertible {
        var description: String
    }

    /// A path segment: everything but unreserved characters percent-encoded (`/` as a vhost is `%2F`).
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"))
            ?? text
    }
}
