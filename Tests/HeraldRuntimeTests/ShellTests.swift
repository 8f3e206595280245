import Foundation
import HeraldTesting
import Testing

/// What tests start through the shell (brokers, PostgreSQL, `ip netns exec`) gets none of the test
/// process's descriptors: the process runs many tests' in-process servers at once.
@Suite("Shell commands started by tests")
struct ShellTests {
    @Test("a daemon started through the shell holds no copy of the test process's sockets: a closed connection reaches its peer")
    func noInheritedDescriptors() async throws {
        // A listening socket and one accepted connection, neither close-on-exec (NIO marks none of its
        // sockets close-on-exec either).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        let client = try RawConnection(port: Int(UInt16(bigEndian: address.sin_port)))
        let accepted = accept(listener, nil, nil)
        try #require(accepted >= 0)
        // A daemon that outlives its shell, as scripts/broker.sh leaves a broker behind.
        _ = try await shell("sleep 4 > /dev/null 2>&1 &")
        close(accepted)
        #expect(await client.waitForClose(within: .seconds(2)), "a process started through the shell kept the connection open")
    }

    @Test("the exit status comes back; a failing command throws with its output")
    func status() async throws {
        #expect(try await shell("echo hello") == "hello\n")
        #expect(await shellStatus("exit 3") != 0)
        await #expect(throws: TestFailure.self) { try await shell("echo gone wrong; exit 2") }
    }
}
