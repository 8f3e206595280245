import Foundation
import HeraldAMQP
import HeraldCore
import HeraldTesting
import Logging
import Testing

/// Several broker nodes and TLS: each test starts RabbitMQ nodes of its own (`PrivateBroker`).
@Suite("AMQP failover between nodes and amqps://")
struct FailoverAndTLSTests {
    func connection(
        _ urls: [String], tls: AMQPSettings.TLS = .init(), onConnect: (@Sendable (AMQPChannel) throws -> Void)? = nil
    ) -> AMQPConnection {
        let connection = AMQPConnection(
            options: .init(
                endpoints: urls.map { AMQPEndpoint(url: $0)! }, tls: tls, role: .publisher, name: "failover-test",
                heartbeat: .seconds(10), connectTimeout: .seconds(2)),
            logger: quietLogger(), onConnect: onConnect)
        connection.start()
        return connection
    }

    @Test("a list of nodes: a dead first node is skipped; when the node in use stops, publishing resumes on the next")
    func failover() async throws {
        try await PrivateBroker.with { node in
            let topology = TestBroker.topology()
            // Nothing listens on port 1: the connection must move on to the private node, then to the main broker.
            let publisher = connection(
                ["amqp://guest:guest@127.0.0.1:1/%2f", node.url, TestBroker.url], onConnect: { try topology.declare(on: $0) })
            #expect(await publisher.waitUntilConnected(timeout: .seconds(10)))
            #expect(publisher.connectedEndpoint?.port == node.port)
            let message = AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "sms", body: Data("one".utf8))
            try await publisher.publish(message)

            try await node.run("stop-app")
            #expect(await eventually(timeout: .seconds(20)) { publisher.connectedEndpoint?.port == TestBroker.endpoint.port })
            try await publisher.publish(message)
            let depth = try await TestBroker.withTopology(topology) { admin in
                try await TestBroker.depth(topology.workQueue(.sms), using: admin)
            }
            #expect(depth == 1)
            await publisher.shutdown()
        }
    }

    @Test("amqps://: the broker's certificate is checked against amqp.tls.caFile, and a client certificate is presented when asked for")
    func tls() async throws {
        let material = TestTLS.shared
        let server = try material.serverFiles()
        let client = try material.clientFiles()
        let settings = PrivateBroker.TLS(
            certificateFile: server.certificate, keyFile: server.key, caFile: material.caFile, requireClientCertificate: true)
        try await PrivateBroker.with(tls: settings) { node in
            let trusted = connection([node.tlsURL], tls: .init(caFile: material.caFile, certFile: client.certificate, keyFile: client.key))
            #expect(await trusted.waitUntilConnected(timeout: .seconds(10)))
            #expect(trusted.connectedEndpoint?.tls == true)
            #expect(try await trusted.perform { _ in true })
            await trusted.shutdown()

            // The broker requires a client certificate.
            let anonymous = connection([node.tlsURL], tls: .init(caFile: material.caFile))
            // Peer verification is on by default: the system's roots do not know the test CA.
            let unverified = connection([node.tlsURL], tls: .init(certFile: client.certificate, keyFile: client.key))
            #expect(await anonymous.waitUntilConnected(timeout: .seconds(4)) == false)
            #expect(await unverified.waitUntilConnected(timeout: .seconds(1)) == false)
            await anonymous.shutdown()
            await unverified.shutdown()

            // A Herald process with amqp.url [amqps://…], amqp.tls and the password from amqp.passwordFile.
            var settings = TestConfiguration()
            let passwordFile = settings.stateDir + "/amqp-password"
            try FileManager.default.createDirectory(atPath: settings.stateDir, withIntermediateDirectories: true)
            try "guest\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
            settings.amqpURL = node.tlsURL.replacingOccurrences(of: "guest:guest@", with: "guest:wrong@")
            settings.amqpExtra =
                "tls: {caFile: \"\(material.caFile)\", certFile: \"\(client.certificate)\", keyFile: \"\(client.key)\"}, passwordFile: \"\(passwordFile)\""
            let path = try settings.write()
            let admin = try HeraldProcess("herald-admin", arguments: ["topology", "declare", "--config", path], logDirectory: settings.stateDir)
            #expect(await admin.waitForExit(timeout: .seconds(30)) == 0, "\(admin.output)")
            #expect(admin.output.contains("wrong") == false)
            try? FileManager.default.removeItem(atPath: settings.stateDir)
        }
    }
}
