import Foundation
import Testing

@testable import HeraldAMQP

/// The frames the connection loop writes itself, byte for byte against AMQP 0-9-1 (the broker-facing
/// half is covered by every publish and ack in the tests against a real RabbitMQ).
@Suite("Outbound frames (publishes and acks written in one send)")
struct OutboundFramesTests {
    /// Splits a buffer into (type, channel, payload), checking sizes and frame-end markers.
    static func frames(_ bytes: [UInt8]) throws -> [(type: UInt8, channel: UInt16, payload: [UInt8])] {
        var result: [(UInt8, UInt16, [UInt8])] = []
        var index = 0
        while index < bytes.count {
            try #require(bytes.count - index >= 8)
            let channel = UInt16(bytes[index + 1]) << 8 | UInt16(bytes[index + 2])
            let size = bytes[index + 3..<index + 7].reduce(0) { $0 << 8 | Int($1) }
            try #require(index + 7 + size < bytes.count)
            #expect(bytes[index + 7 + size] == 0xCE)
            result.append((bytes[index], channel, Array(bytes[index + 7..<index + 7 + size])))
            index += 8 + size
        }
        return result
    }

    @Test("a publish is a basic.publish method, a content header with its properties in flag order, and the body")
    func publish() throws {
        var frames = OutboundFrames()
        let message = AMQPOutgoingMessage(
            exchange: "herald", routingKey: "sms", body: Data("{}".utf8), messageID: "m1", type: "sms", contentType: "application/json",
            headers: ["b": .int(-2), "a": .string("x"), "c": .bool(true), "skip": .unsupported], persistent: true, mandatory: true,
            timestamp: Date(timeIntervalSince1970: 258))
        try frames.publish(message, channel: 1, frameMax: 131_072)
        let parsed = try Self.frames(frames.bytes)
        try #require(parsed.count == 3)
        #expect(frames.frameCount == 3)
        #expect(parsed.map(\.type) == [1, 2, 3])
        #expect(parsed.allSatisfy { $0.channel == 1 })
        // class 60, method 40, ticket 0, "herald", "sms", mandatory
        #expect(parsed[0].payload == [0, 60, 0, 40, 0, 0, 6] + Array("herald".utf8) + [3] + Array("sms".utf8) + [1])
        var header: [UInt8] = [0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
        // content-type (15), headers (13), delivery-mode (12), message-id (7), timestamp (6), type (5)
        header += [0b1011_0000, 0b1110_0000]
        header += [16] + Array("application/json".utf8)
        let table: [UInt8] =
            [1, UInt8(ascii: "a"), UInt8(ascii: "S"), 0, 0, 0, 1, UInt8(ascii: "x")]
            + [1, UInt8(ascii: "b"), UInt8(ascii: "l"), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]
            + [1, UInt8(ascii: "c"), UInt8(ascii: "t"), 1]
        header += [0, 0, 0, UInt8(table.count)] + table
        header += [2, 2] + Array("m1".utf8)
        header += [0, 0, 0, 0, 0, 0, 1, 2]
        header += [3] + Array("sms".utf8)
        #expect(parsed[1].payload == header)
        #expect(parsed[2].payload == Array("{}".utf8))
    }

    @Test("a body longer than a frame is split at frame-max less 8; an empty body has no body frame; absent properties have no flag")
    func bodySplitting() throws {
        var frames = OutboundFrames()
        let body = Data((0..<25).map { UInt8($0) })
        try frames.publish(
            AMQPOutgoingMessage(exchange: "", routingKey: "q", body: body, contentType: nil, persistent: false, mandatory: false),
            channel: 1, frameMax: 18)
        let parsed = try Self.frames(frames.bytes)
        #expect(parsed.map(\.type) == [1, 2, 3, 3, 3])
        #expect(parsed[2...].map(\.payload.count) == [10, 10, 5])
        #expect(parsed[2...].flatMap(\.payload) == Array(body))
        #expect(Array(parsed[1].payload.suffix(2)) == [0, 0])
        #expect(parsed[0].payload.last == 0)

        var empty = OutboundFrames()
        try empty.publish(AMQPOutgoingMessage(exchange: "", routingKey: "q", body: Data()), channel: 1, frameMax: 131_072)
        #expect(try Self.frames(empty.bytes).map(\.type) == [1, 2])
    }

    @Test("acks and nacks: one method frame each, in order; nack's requeue bit")
    func acknowledgements() throws {
        var frames = OutboundFrames()
        frames.ack(tag: 7, channel: 1)
        frames.nack(tag: 8, requeue: true, channel: 1)
        frames.nack(tag: 9, requeue: false, channel: 1)
        let parsed = try Self.frames(frames.bytes)
        #expect(
            parsed.map(\.payload) == [
                [0, 60, 0, 80, 0, 0, 0, 0, 0, 0, 0, 7, 0],
                [0, 60, 0, 120, 0, 0, 0, 0, 0, 0, 0, 8, 2],
                [0, 60, 0, 120, 0, 0, 0, 0, 0, 0, 0, 9, 0],
            ])
        frames.removeAll()
        #expect(frames.isEmpty && frames.frameCount == 0)
    }

    @Test("a name longer than a short string is refused and writes nothing")
    func longName() {
        var frames = OutboundFrames()
        let message = AMQPOutgoingMessage(exchange: "", routingKey: String(repeating: "r", count: 256), body: Data("x".utf8))
        #expect(throws: AMQPError.self) { try frames.publish(message, channel: 1, frameMax: 131_072) }
        #expect(frames.isEmpty)
    }
}
