import Foundation

/// A RabbitMQ node of a test's own, started through the project's scripts/broker.sh on free ports
/// with its own data directory, so a test can stop it, restart it, or give it a TLS listener without
/// disturbing the tests that share the main broker.
public struct PrivateBroker: Sendable {
    /// A TLS listener: the broker's certificate and key, the CA it checks clients against, and whether
    /// a client certificate is required.
    public struct TLS: Sendable {
        public var certificateFile: String
        public var keyFile: String
        public var caFile: String
        public var requireClientCertificate: Bool

        public init(certificateFile: String, keyFile: String, caFile: String, requireClientCertificate: Bool) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.caFile = caFile
            self.requireClientCertificate = requireClientCertificate
        }
    }

    public let port = freePort()
    public let tlsPort = freePort()
    let distributionPort = freePort()
    public let directory = NSTemporaryDirectory() + "herald-broker-\(UUID().uuidString.prefix(8))"
    public let tls: TLS?
    static let script = TestConfiguration.repositoryRoot.appendingPathComponent("scripts/broker.sh").path

    init(tls: TLS?) {
        self.tls = tls
    }

    public var url: String { "amqp://guest:guest@127.0.0.1:\(port)/%2f" }
    /// The TLS listener by host name (the test certificate names `localhost`).
    public var tlsURL: String { "amqps://guest:guest@localhost:\(tlsPort)/%2f" }

    /// A started node. A free port can be taken by another test's connection before RabbitMQ binds it
    /// (tests run in parallel), so a failed start is retried on new ports.
    public static func started(tls: TLS? = nil) async throws -> PrivateBroker {
        var failure: (any Error)?
        for _ in 0..<3 {
            let broker = PrivateBroker(tls: tls)
            do {
                try await broker.run("start")
                return broker
            } catch {
                failure = error
                // Stopped before its directory goes: a start that failed late may have left a node
                // running, which would outlive the test and dump Mnesia's core when its data vanished.
                await broker.remove()
            }
        }
        throw failure ?? TestFailure("the private broker did not start")
    }

    /// Runs `body` with a started node and always stops it and removes its directory.
    public static func with<T>(tls: TLS? = nil, _ body: (PrivateBroker) async throws -> T) async throws -> T {
        let broker = try await started(tls: tls)
        do {
            let result = try await body(broker)
            await broker.remove()
            return result
        } catch {
            await broker.remove()
            throw error
        }
    }

    /// Stops the node and removes its data.
    public func remove() async {
        try? await run("stop")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `scripts/broker.sh <command>` for this node: start, stop, stop-app, start-app.
    public func run(_ command: String) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let log = directory + "/broker-script.log"
        var environment = "AMQP_PORT=\(port) AMQP_DIST_PORT=\(distributionPort) HERALD_STATE_DIR='\(directory)'"
        if let tls {
            environment +=
                " AMQP_TLS_PORT=\(tlsPort) AMQP_TLS_CERT='\(tls.certificateFile)' AMQP_TLS_KEY='\(tls.keyFile)' AMQP_TLS_CA='\(tls.caFile)' AMQP_TLS_REQUIRE_CLIENT_CERT=\(tls.requireClientCertificate)"
        }
        let line = "\(environment) '\(Self.script)' \(command) >> '\(log)' 2>&1"
        let status = await shellStatus(line)
        guard status == 0 else {
            let output = (FileManager.default.contents(atPath: log)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            throw TestFailure("scripts/broker.sh \(command) failed (port \(port), status \(status)):\n\(output.suffix(2000))")
        }
    }
}
