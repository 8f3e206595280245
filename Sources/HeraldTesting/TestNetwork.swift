import Foundation

/// Hosts for tests of what crosses a network: one network namespace per host, joined by a bridge that
/// lives in a namespace of its own, plus one veth into the test's own namespace so the test process
/// reaches every host (10.<x>.<y>.254). Nothing else of the machine's networking is touched, and
/// `remove()` kills every process left in the namespaces and deletes them.
public final class TestNetwork: Sendable {
    public let hosts: [String]
    /// `10.x.y` of this network: random, so two test runs on one machine do not collide.
    public let subnet: String
    let prefix: String

    /// Creates the namespaces; `hosts` are short names (a, b, c).
    public init(hosts: [String]) async throws {
        self.hosts = hosts
        self.prefix = "hn" + String(UInt16.random(in: 0...UInt16.max), radix: 16)
        self.subnet = "10.\(Int.random(in: 100...199)).\(Int.random(in: 1...250))"
        do {
            try Self.ip(["netns", "add", "\(prefix)sw"])
            try Self.ip(["-n", "\(prefix)sw", "link", "add", "br0", "type", "bridge"])
            try Self.ip(["-n", "\(prefix)sw", "link", "set", "br0", "up"])
            for (index, host) in hosts.enumerated() {
                let namespace = self.namespace(host)
                try Self.ip(["netns", "add", namespace])
                try plug(namespace: namespace, interface: "\(prefix)\(host)", address: "\(subnet).\(index + 1)")
                try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
            }
            try plug(namespace: nil, interface: "\(prefix)t", address: "\(subnet).254")
        } catch {
            remove()
            throw error
        }
    }

    /// A veth pair: `interface` with `address` in `namespace` (nil: the test's own), its peer on the bridge.
    private func plug(namespace: String?, interface: String, address: String) throws {
        try Self.ip(["link", "add", interface, "type", "veth", "peer", "name", interface + "p"])
        try Self.ip(["link", "set", interface + "p", "netns", "\(prefix)sw"])
        try Self.ip(["-n", "\(prefix)sw", "link", "set", interface + "p", "master", "br0", "up"])
        if let namespace { try Self.ip(["link", "set", interface, "netns", namespace]) }
        let scope = namespace.map { ["-n", $0] } ?? []
        try Self.ip(scope + ["addr", "add", address + "/24", "dev", interface])
        try Self.ip(scope + ["link", "set", interface, "up"])
    }

    public func namespace(_ host: String) -> String { prefix + host }

    /// The host's address on the bridge.
    public func address(_ host: String) -> String {
        "\(subnet).\((hosts.firstIndex(of: host) ?? 0) + 1)"
    }

    /// The test process's own address on the bridge.
    public var testAddress: String { "\(subnet).254" }

    /// The network in CIDR notation.
    public var cidr: String { "\(subnet).0/24" }

    /// Runs `command` inside `host` and waits; throws with its output when it fails. Through the
    /// shell with output to a file: a command may leave a daemon behind (scripts/broker.sh), which
    /// must not hold a pipe of ours open.
    @discardableResult
    public func run(_ host: String, _ command: [String], environment: [String: String] = [:]) async throws -> String {
        let words = ["ip", "netns", "exec", namespace(host), "env"] + environment.map { "\($0.key)=\($0.value)" } + command
        return try await shell(words.map(shellQuoted).joined(separator: " "))
    }

    /// Kills every process in the namespaces and deletes them (the veths go with them).
    public func remove() {
        for namespace in hosts.map(namespace) + ["\(prefix)sw"] {
            if let pids = try? Self.ip(["netns", "pids", namespace]) {
                for pid in pids.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
            }
        }
        usleep(200_000)
        for namespace in hosts.map(namespace) + ["\(prefix)sw"] { _ = try? Self.ip(["netns", "delete", namespace]) }
        _ = try? Self.ip(["link", "delete", "\(prefix)t"])
    }

    /// iproute2's `ip` (Debian installs it in /usr/sbin; older systems in /sbin).
    static let ipPath = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    /// `ip` with `arguments`; its output, or a failure with it.
    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipPath)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try launch(process)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw TestFailure("ip \(arguments.joined(separator: " ")) failed (\(process.terminationStatus)): \(text.suffix(2000))")
        }
        return text
    }
}
