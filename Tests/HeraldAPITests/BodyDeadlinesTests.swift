import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldAPI

/// The slow-body guard without a server: a read registers, leaves when done, and a sweep closes only
/// connections whose body is overdue.
@Suite("Body deadlines (one sweep instead of a timer per request)")
struct BodyDeadlinesTests {
    static func connected() async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 8080))
        return channel
    }

    @Test("a read within its deadline is left open and leaves the table when the body is in")
    func readWithinDeadline() async throws {
        let deadlines = BodyDeadlines(timeout: .seconds(60))
        let channel = try await Self.connected()
        let seen = try await deadlines.guarding(channel) {
            deadlines.sweep(now: .now())
            return deadlines.count
        }
        #expect(seen == 1)
        #expect(deadlines.count == 0)
        #expect(channel.isActive)
    }

    @Test("an overdue read's connection is closed by the sweep, and only that one")
    func overdueReadIsClosed() async throws {
        let deadlines = BodyDeadlines(timeout: .seconds(1))
        let slow = try await Self.connected()
        let other = try await Self.connected()
        try await deadlines.guarding(slow) {
            try await Task.sleep(for: .milliseconds(300))
            try await deadlines.guarding(other) {
                // 800 ms from now is past `slow`'s deadline (registered 300 ms earlier) and before `other`'s.
                deadlines.sweep(now: .now() + .milliseconds(800))
                #expect(deadlines.count == 1)
            }
        }
        try await slow.closeFuture.get()
        #expect(slow.isActive == false)
        #expect(other.isActive)
        #expect(deadlines.count == 0)
    }
}
