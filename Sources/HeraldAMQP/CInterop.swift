import CRabbitMQ
import Foundation

/// Owns C memory handed to rabbitmq-c for the duration of one call: strings, tables, bodies.
/// `amqp_cstring_bytes` on a bridged Swift string would dangle once the bridge ends.
final class CArena {
    private var allocations: [UnsafeMutableRawPointer] = []

    deinit {
        for pointer in allocations { free(pointer) }
    }

    /// Bytes copied into C memory that lives as long as the arena.
    func bytes(_ data: some Collection<UInt8>) -> amqp_bytes_t {
        guard data.isEmpty == false else { return amqp_bytes_t(len: 0, bytes: nil) }
        let pointer = malloc(data.count)!
        allocations.append(pointer)
        let buffer = UnsafeMutableRawBufferPointer(start: pointer, count: data.count)
        buffer.copyBytes(from: data)
        return amqp_bytes_t(len: data.count, bytes: pointer)
    }

    func bytes(_ text: String) -> amqp_bytes_t { bytes(Array(text.utf8)) }

    /// A NUL-terminated copy of `text`.
    func cString(_ text: String) -> UnsafePointer<CChar> {
        let pointer = strdup(text)!
        allocations.append(UnsafeMutableRawPointer(pointer))
        return UnsafePointer(pointer)
    }

    /// A field table with string, integer and boolean values.
    func table(_ entries: AMQPHeaders) -> amqp_table_t {
        let usable = entries.filter { $0.value != .unsupported }.map { $0 }
        guard usable.isEmpty == false else { return amqp_empty_table }
        let raw = malloc(MemoryLayout<amqp_table_entry_t>.stride * usable.count)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: amqp_table_entry_t.self, capacity: usable.count)
        for (index, (key, value)) in usable.enumerated() {
            var entry = amqp_table_entry_t()
            entry.key = bytes(key)
            switch value {
            case .string(let text):
                entry.value.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
                entry.value.value.bytes = bytes(text)
            case .int(let number):
                entry.value.kind = UInt8(AMQP_FIELD_KIND_I64.rawValue)
                entry.value.value.i64 = number
            case .bool(let flag):
                entry.value.kind = UInt8(AMQP_FIELD_KIND_BOOLEAN.rawValue)
                entry.value.value.boolean = flag ? 1 : 0
            case .unsupported:
                continue
            }
            (pointer + index).initialize(to: entry)
        }
        return amqp_table_t(num_entries: Int32(usable.count), entries: pointer)
    }
}

extension amqp_bytes_t {
    /// A Swift copy of the bytes.
    var data: Data {
        guard len > 0, let bytes else { return Data() }
        return Data(bytes: bytes, count: len)
    }

    /// Decoded from the library's bytes in place (through `data` it was two copies per header).
    var string: String {
        guard let bytes, len > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: len), as: UTF8.self)
    }
}

extension amqp_table_t {
    /// The string, integer and boolean entries; other kinds read as `.unsupported`.
    var headers: AMQPHeaders {
        var result = AMQPHeaders()
        guard num_entries > 0, let entries else { return result }
        for index in 0..<Int(num_entries) {
            let entry = entries[index]
            let value: AMQPHeaderValue
            switch Int(entry.value.kind) {
            case Int(AMQP_FIELD_KIND_UTF8.rawValue), Int(AMQP_FIELD_KIND_BYTES.rawValue):
                value = .string(entry.value.value.bytes.string)
            case Int(AMQP_FIELD_KIND_I8.rawValue): value = .int(Int64(entry.value.value.i8))
            case Int(AMQP_FIELD_KIND_U8.rawValue): value = .int(Int64(entry.value.value.u8))
            case Int(AMQP_FIELD_KIND_I16.rawValue): value = .int(Int64(entry.value.value.i16))
            case Int(AMQP_FIELD_KIND_U16.rawValue): value = .int(Int64(entry.value.value.u16))
            case Int(AMQP_FIELD_KIND_I32.rawValue): value = .int(Int64(entry.value.value.i32))
            case Int(AMQP_FIELD_KIND_U32.rawValue): value = .int(Int64(entry.value.value.u32))
            case Int(AMQP_FIELD_KIND_I64.rawValue): value = .int(entry.value.value.i64)
            case Int(AMQP_FIELD_KIND_U64.rawValue), Int(AMQP_FIELD_KIND_TIMESTAMP.rawValue):
                value = .int(Int64(truncatingIfNeeded: entry.value.value.u64))
            case Int(AMQP_FIELD_KIND_BOOLEAN.rawValue): value = .bool(entry.value.value.boolean != 0)
            default: value = .unsupported
            }
            result[entry.key.string] = value
        }
        return result
    }
}

extension amqp_rpc_reply_t {
    /// nil when the reply is normal, otherwise the error it describes.
    var error: AMQPError? {
        switch reply_type {
        case AMQP_RESPONSE_NORMAL:
            return nil
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            let text = String(cString: amqp_error_string2(library_error))
            if library_error == AMQP_STATUS_TIMEOUT.rawValue { return AMQPError(.connectionLost, "RPC timed out: \(text)") }
            return AMQPError(.library, text)
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if reply.id == AMQP_CHANNEL_CLOSE_METHOD, let decoded = reply.decoded {
                let close = decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
                return AMQPError(.serverClosed(code: Int(close.reply_code)), close.reply_text.string)
            }
            if reply.id == AMQP_CONNECTION_CLOSE_METHOD, let decoded = reply.decoded {
                let close = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
                return AMQPError(.serverClosed(code: Int(close.reply_code)), "connection closed: \(close.reply_text.string)")
            }
            return AMQPError(.library, "unexpected server reply 0x\(String(reply.id, radix: 16))")
        default:
            return AMQPError(.library, "no reply")
        }
    }
}
