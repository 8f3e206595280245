import Foundation

/// AMQP 0-9-1 frames for the publishes and acknowledgements of one turn of the connection loop,
/// encoded into one buffer so the loop writes them with one `send(2)`.
///
/// rabbitmq-c writes every frame with a system call of its own: three per publish (method, content
/// header, body) and one per ack. On loopback each `send` also runs the receiving side's TCP work,
/// and herald-api's connection thread spent 13 % of the process's CPU in them (about 20 µs per
/// accepted send at 3,800 sends/s). The loop now drains its inbox into these frames and writes them
/// once; rabbitmq-c keeps everything else (handshake, RPCs, reading, heartbeats). Only plain TCP
/// connections take this path: a TLS connection's bytes must go through the library's TLS socket.
struct OutboundFrames {
    private(set) var bytes: [UInt8] = []
    /// Frames in the buffer (tests, metrics).
    private(set) var frameCount = 0

    var isEmpty: Bool { bytes.isEmpty }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        frameCount = 0
    }

    // Frame types, the basic class and its methods (AMQP 0-9-1, section 4.2 and the class reference).
    static let methodFrame: UInt8 = 1
    static let headerFrame: UInt8 = 2
    static let bodyFrame: UInt8 = 3
    static let frameEnd: UInt8 = 0xCE
    static let basicClass: UInt16 = 60
    static let publishMethod: UInt16 = 40
    static let ackMethod: UInt16 = 80
    static let nackMethod: UInt16 = 120

    /// `basic.publish`, its content header and as many body frames as `frameMax` requires. Throws (and
    /// writes nothing) when a name does not fit a short string, as rabbitmq-c's encoder refuses it.
    mutating func publish(_ message: AMQPOutgoingMessage, channel: UInt16, frameMax: Int) throws(AMQPError) {
        // Checked in place: the arrays this was built from were most of an encoding's allocations.
        for name in [message.exchange, message.routingKey, message.contentType, message.messageID, message.type] {
            try Self.checkShortString(name)
        }
        for (name, _) in message.headers { try Self.checkShortString(name) }
        var frame = beginFrame(Self.methodFrame, channel)
        u16(Self.basicClass)
        u16(Self.publishMethod)
        u16(0)  // reserved-1 (ticket)
        shortString(message.exchange)
        shortString(message.routingKey)
        u8(message.mandatory ? 1 : 0)  // bit 0 mandatory, bit 1 immediate (never)
        endFrame(frame)
        frame = beginFrame(Self.headerFrame, channel)
        u16(Self.basicClass)
        u16(0)  // weight
        u64(UInt64(message.body.count))
        properties(message)
        endFrame(frame)
        // A body frame's payload is at most frame-max less the 8 bytes of frame header and end.
        let chunk = max(1, frameMax > 0 ? frameMax - 8 : 131_072 - 8)
        var offset = 0
        while offset < message.body.count {
            let end = min(message.body.count, offset + chunk)
            frame = beginFrame(Self.bodyFrame, channel)
            bytes.append(contentsOf: message.body[offset..<end])
            endFrame(frame)
            offset = end
        }
    }

    private static func checkShortString(_ name: String?) throws(AMQPError) {
        guard let name, name.utf8.count > 255 else { return }
        throw AMQPError(.library, "basic.publish: \"\(name.prefix(40))…\" is longer than an AMQP short string (255 bytes)")
    }

    /// `basic.ack` of one delivery, or with `multiple` of every unacknowledged one up to `tag`.
    mutating func ack(tag: UInt64, multiple: Bool = false, channel: UInt16) {
        let frame = beginFrame(Self.methodFrame, channel)
        u16(Self.basicClass)
        u16(Self.ackMethod)
        u64(tag)
        u8(multiple ? 1 : 0)
        endFrame(frame)
    }

    /// `basic.nack` of one delivery; without `requeue` the broker dead-letters it.
    mutating func nack(tag: UInt64, requeue: Bool, channel: UInt16) {
        let frame = beginFrame(Self.methodFrame, channel)
        u16(Self.basicClass)
        u16(Self.nackMethod)
        u64(tag)
        u8(requeue ? 0b10 : 0)  // bit 0 multiple, bit 1 requeue
        endFrame(frame)
    }

    /// A frame is type, channel, payload size, payload, frame-end: `beginFrame` writes the first three
    /// (the size as a placeholder) and returns where the size goes; the caller writes the payload;
    /// `endFrame` fills the size in and ends the frame. Not a closure over the payload: closures that
    /// captured the message copied it, retaining every reference in it, three times a publish.
    private mutating func beginFrame(_ type: UInt8, _ channel: UInt16) -> Int {
        u8(type)
        u16(channel)
        return sizePlaceholder()
    }

    private mutating func endFrame(_ sizeAt: Int) {
        fillSize(at: sizeAt)
        u8(Self.frameEnd)
        frameCount += 1
    }

    /// A 32-bit length written before what it measures is known (a frame's payload, a table): returns
    /// where `fillSize(at:)` writes it once the bytes it counts follow.
    private mutating func sizePlaceholder() -> Int {
        let sizeAt = bytes.count
        u32(0)
        return sizeAt
    }

    /// The bytes written after the placeholder at `sizeAt`, big-endian, into it.
    private mutating func fillSize(at sizeAt: Int) {
        let size = UInt32(bytes.count - sizeAt - 4)
        withUnsafeBytes(of: size.bigEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[sizeAt + index] = byte }
        }
    }

    /// The basic class's property flags and the properties present, in flag order: content-type (bit
    /// 15), headers (13), delivery-mode (12), message-id (7), timestamp (6), type (5).
    private mutating func properties(_ message: AMQPOutgoingMessage) {
        // `AMQPHeaders` keeps its names in order, the order `CArena.table` writes them.
        let hasHeaders = message.headers.contains { $0.value != .unsupported }
        var flags: UInt16 = 0
        if message.contentType != nil { flags |= 1 << 15 }
        if hasHeaders { flags |= 1 << 13 }
        if message.persistent { flags |= 1 << 12 }
        if message.messageID != nil { flags |= 1 << 7 }
        if message.timestamp != nil { flags |= 1 << 6 }
        if message.type != nil { flags |= 1 << 5 }
        u16(flags)
        if let contentType = message.contentType { shortString(contentType) }
        if hasHeaders { table(message.headers) }
        if message.persistent { u8(2) }
        if let messageID = message.messageID { shortString(messageID) }
        if let timestamp = message.timestamp { u64(UInt64(max(0, timestamp.timeIntervalSince1970))) }
        if let type = message.type { shortString(type) }
    }

    /// A field table: its byte length, then name and typed value per entry (`S` long string, `l` signed
    /// 64-bit, `t` boolean), names in order as `CArena.table` writes them; values of other kinds are left out.
    private mutating func table(_ entries: AMQPHeaders) {
        let sizeAt = sizePlaceholder()
        for (key, value) in entries where value != .unsupported {
            shortString(key)
            switch value {
            case .string(let text):
                u8(UInt8(ascii: "S"))
                longString(text)
            case .int(let number):
                u8(UInt8(ascii: "l"))
                u64(UInt64(bitPattern: number))
            case .bool(let flag):
                u8(UInt8(ascii: "t"))
                u8(flag ? 1 : 0)
            case .unsupported:
                continue
            }
        }
        fillSize(at: sizeAt)
    }

    private mutating func u8(_ value: UInt8) { bytes.append(value) }
    private mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    private mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    private mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }

    /// At most 255 bytes (`publish` checked).
    private mutating func shortString(_ text: String) {
        u8(UInt8(truncatingIfNeeded: text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func longString(_ text: String) {
        u32(UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }
}
