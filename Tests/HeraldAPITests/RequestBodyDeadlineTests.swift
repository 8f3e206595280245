import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import HeraldAPI

/// The pipeline's body deadline on an embedded channel, whose loop clock the test moves: no server,
/// no sleeping.
@Suite("Request body deadline (in the channel pipeline)")
struct RequestBodyDeadlineTests {
    /// Records close requests; an embedded channel would take an output-only close for a full one, so
    /// that one stops here (the channel stays active, as a socket whose input is still open does).
    final class Closes: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var modes: [CloseMode] = []

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            modes.append(mode)
            if mode == .output {
                promise?.succeed(())
            } else {
                context.close(mode: mode, promise: promise)
            }
        }
    }

    static func channel(timeout: TimeAmount = .seconds(30), closes: Closes = Closes()) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handlers: [closes, RequestBodyDeadline(timeout: timeout)])
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        return channel
    }

    static let post = HTTPRequest(method: .post, scheme: nil, authority: "127.0.0.1", path: "/admin/login")

    static func body(_ text: String) -> HTTPRequestPart { .body(ByteBuffer(string: text)) }

    @Test("a body still arriving at the deadline closes the connection; one second earlier it is open")
    func overdueBodyCloses() throws {
        let channel = try Self.channel()
        try channel.writeInbound(HTTPRequestPart.head(Self.post))
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        try channel.writeInbound(Self.body("a"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "trickled bytes do not move the deadline, but it has not passed yet")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(channel.isActive == false)
    }

    @Test("a body that ends in time disarms the deadline; the next request gets a deadline of its own")
    func bodyInTimeStaysOpen() throws {
        let channel = try Self.channel()
        try channel.writeInbound(HTTPRequestPart.head(Self.post))
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        try channel.writeInbound(Self.body("token=x"))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        // Every part reaches the server unchanged.
        var parts: [HTTPRequestPart] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { parts.append(part) }
        #expect(parts.count == 3)

        try channel.writeInbound(HTTPRequestPart.head(Self.post))
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive == false)
    }

    @Test("an answer written before the body ended carries Connection: close and shuts the output; the deadline still closes")
    func earlyAnswerClosesAfterward() throws {
        let closes = Closes()
        let channel = try Self.channel(closes: closes)
        try channel.writeInbound(HTTPRequestPart.head(Self.post))
        try channel.writeInbound(Self.body("a"))
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        guard case .head(let answer) = try channel.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(answer.headerFields[.connection] == "close")
        #expect(closes.modes == [.output], "only the output side is shut while the body is still being read")
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(channel.isActive == false)
    }

    @Test("an early answer whose body then ends closes the connection at the body's end")
    func earlyAnswerThenBodyEnd() throws {
        let closes = Closes()
        let channel = try Self.channel(closes: closes)
        try channel.writeInbound(HTTPRequestPart.head(Self.post))
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .unauthorized)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        #expect(closes.modes == [.output])
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(closes.modes == [.output, .all])
        #expect(channel.isActive == false)
    }

    @Test("an answer written after the body ended is left as it is and keeps the connection")
    func lateAnswerKeepsConnection() throws {
        let channel = try Self.channel()
        try channel.writeInbound(HTTPRequestPart.head(Self.post))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        guard case .head(let answer) = try channel.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(answer.headerFields[.connection] == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
    }
}
