import Foundation
import HeraldAMQP
import HeraldCore
import Logging

/// The broker tests run against: the one `make test` started (or `HERALDTEST_AMQP_URL`), with a
/// unique exchange per test so tests can run in parallel and clean up after themselves.
public enum TestBroker {
    /// `amqp://guest:guest@127.0.0.1:5672/%2f` unless `HERALDTEST_AMQP_URL` says otherwise.
    public static var url: String {
        ProcessInfo.processInfo.environment["HERALDTEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
    }

    public static var endpoint: AMQPEndpoint { AMQPEndpoint(url: url)! }

    /// A fresh exchange name (`t-<8 hex>`); all queue names derive from it.
    public static func uniqueExchange(_ label: String = "t") -> String {
        "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// A topology for one test.
    public static func topology(
        exchange: String = uniqueExchange(), queueType: String = "quorum", deliveryLimit: Int = 10,
        retryDelays: [Duration] = [.milliseconds(300), .seconds(1), .seconds(5)]
    ) -> Topology {
        Topology(
            exchange: exchange, queueType: queueType, deliveryLimit: deliveryLimit, retryDelays: [.sms: retryDelays],
            throttleDelays: [.sms: [.milliseconds(250)]])
    }

    /// A started connection of `role`, waiting until it is connected.
    public static func connection(
        _ role: AMQPConnection.Role, name: String = "test", url: String = TestBroker.url, logger: Logger = quietLogger(),
        publishTimeout: Duration = .seconds(5), onConnect: (@Sendable (AMQPChannel) throws -> Void)? = nil
    ) async throws -> AMQPConnection {
        let endpoint = AMQPEndpoint(url: url)!
        let connection = AMQPConnection(
            options: .init(endpoint: endpoint, role: role, name: name, heartbeat: .seconds(10), publishTimeout: publishTimeout),
            logger: logger, onConnect: onConnect)
        connection.start()
        guard await connection.waitUntilConnected(timeout: .seconds(10)) else {
            await connection.shutdown()
            throw TestFailure("no broker at \(endpoint.redacted); run `make test` (it starts one) or scripts/broker.sh start")
        }
        return connection
    }

    /// Runs `body` with a connection whose spare channel declared `topology`, deleting it afterwards.
    public static func withTopology<T: Sendable>(
        _ topology: Topology, _ body: (AMQPConnection) async throws -> T
    ) async throws -> T {
        let admin = try await connection(.publisher, name: "test-admin")
        try await admin.perform { try topology.declare(on: $0) }
        do {
            let result = try await body(admin)
            try? await admin.perform { try topology.delete(on: $0) }
            await admin.shutdown()
            return result
        } catch {
            try? await admin.perform { try topology.delete(on: $0) }
            await admin.shutdown()
            throw error
        }
    }

    /// Every message currently in `queue`, removed from it.
    public static func drain(_ queue: String, using connection: AMQPConnection) async throws -> [AMQPDelivery] {
        try await connection.perform { channel in
            var messages: [AMQPDelivery] = []
            while let message = try channel.get(queue) { messages.append(message) }
            return messages
        }
    }

    /// Ready-message count of `queue`.
    public static func depth(_ queue: String, using connection: AMQPConnection) async throws -> Int {
        try await connection.perform { try $0.inspectQueue(queue).messages }
    }
}

/// A test precondition that failed (missing broker, timeout) with an explanation.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
public func eventually(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
