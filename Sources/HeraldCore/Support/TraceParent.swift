/// A W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), carried from the HTTP request into the job's
/// AMQP headers so a send can be followed across processes.
public struct TraceParent: Sendable, Equatable, CustomStringConvertible {
    public let traceID: String
    public let spanID: String
    public let flags: String

    /// A new root trace (every send without a `traceparent` makes one): its 24 random bytes on the
    /// stack, each id's digits written from them, no arrays between.
    public static func random() -> TraceParent {
        withUnsafeTemporaryAllocation(byteCount: 24, alignment: 8) { raw in
            SecureRandom.fill(raw)
            let bytes = UnsafeRawBufferPointer(raw)
            return TraceParent(
                traceID: SHA256Hex.hex(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<16])),
                spanID: SHA256Hex.hex(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[16...])), flags: "01")
        }
    }

    /// A child span of the same trace (what a service passes on).
    public func child() -> TraceParent {
        TraceParent(traceID: traceID, spanID: Self.hex(SecureRandom.bytes(8)), flags: flags)
    }

    /// Parses a version-00 header; nil when malformed or all-zero.
    public init?(header: String) {
        let parts = header.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0] == "00", Self.isHex(parts[1], 32), Self.isHex(parts[2], 16), Self.isHex(parts[3], 2),
            parts[1] != String(repeating: "0", count: 32), parts[2] != String(repeating: "0", count: 16)
        else { return nil }
        self.init(traceID: parts[1], spanID: parts[2], flags: parts[3])
    }

    init(traceID: String, spanID: String, flags: String) {
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
    }

    /// Written into one string of its final size (every job carries one): interpolation appended its
    /// five pieces one by one, each through String's generic growth path.
    public var description: String {
        let count = 3 + traceID.utf8.count + 1 + spanID.utf8.count + 1 + flags.utf8.count
        return String(unsafeUninitializedCapacity: count) { out in
            var end = out[...].initialize(fromContentsOf: "00-".utf8)
            end = out[end...].initialize(fromContentsOf: traceID.utf8)
            out[end] = UInt8(ascii: "-")
            end = out[(end + 1)...].initialize(fromContentsOf: spanID.utf8)
            out[end] = UInt8(ascii: "-")
            return out[(end + 1)...].initialize(fromContentsOf: flags.utf8)
        }
    }

    static func isHex(_ text: String, _ length: Int) -> Bool {
        text.count == length && text.allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isLowercase) }
    }

    /// Lowercase hex (a table of bytes, not of Characters: this runs for every request).
    static func hex(_ bytes: [UInt8]) -> String {
        SHA256Hex.hex(bytes)
    }
}
