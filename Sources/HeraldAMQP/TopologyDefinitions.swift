import Foundation

extension Topology {
    /// The topology as a RabbitMQ definitions document (`rabbitmqctl import_definitions`, or
    /// `load_definitions` in rabbitmq.conf), so a broker can be prepared before any Herald process
    /// connects, by people or tools that own the broker:
    ///
    /// - the virtual host, and `user` with permissions on Herald's exchanges and queues only (names
    ///   starting with the exchange name); the user has no password here: set one with
    ///   `rabbitmqctl change_password` (definitions would otherwise carry a password hash);
    /// - both exchanges, every queue with exactly the arguments `declare` uses (so a later declare by
    ///   Herald succeeds), and the bindings.
    ///
    /// Herald needs no policies: every queue argument is set at declaration. Returns JSON text with
    /// sorted keys, so the file in deploy/ can be compared with what this build exports.
    public func definitions(virtualHost: String, user: String) throws -> String {
        let names = "^" + NSRegularExpression.escapedPattern(for: exchange) + "(\\..+)?$"
        let document: [String: Any] = [
            "vhosts": [["name": virtualHost]],
            "users": [
                ["name": user, "password_hash": "", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": [String](), "limits": [:]]
            ],
            "permissions": [["user": user, "vhost": virtualHost, "configure": names, "write": names, "read": names]],
            "topic_permissions": [],
            "exchanges": [exchange, deadLetterExchange].map { name in
                [
                    "name": name, "vhost": virtualHost, "type": "direct", "durable": true, "auto_delete": false, "internal": false,
                    "arguments": [:],
                ]
            },
            "queues": plan().map { queue in
                [
                    "name": queue.name, "vhost": virtualHost, "durable": true, "auto_delete": false,
                    "arguments": queue.arguments.compactMapValues(\.jsonValue),
                ]
            },
            "bindings": plan().compactMap { queue -> [String: Any]? in
                guard let (source, routingKey) = queue.boundTo else { return nil }
                return [
                    "source": source, "vhost": virtualHost, "destination": queue.name, "destination_type": "queue",
                    "routing_key": routingKey, "arguments": [:],
                ]
            },
            "policies": [],
            "parameters": [],
            "global_parameters": [],
        ]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

extension AMQPHeaderValue {
    /// The value as JSON (queue arguments are strings and integers).
    var jsonValue: Any? {
        switch self {
        case .string(let text): text
        case .int(let number): number
        case .bool(let flag): flag
        case .unsupported: nil
        }
    }
}
