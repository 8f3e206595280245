import Testing

@testable import HeraldAMQP

/// The header table as a sorted list: it must read and write like the dictionary it replaced, and keep
/// its names in the order the wire encoders rely on.
@Suite("AMQP headers (a sorted field table)")
struct AMQPHeadersTests {
    @Test("names are kept in order whatever order they are set in; a name is found, replaced and removed")
    func orderAndLookup() {
        var headers: AMQPHeaders = ["x-b": .int(2), "traceparent": .string("t"), "x-a": .bool(true)]
        #expect(headers.keys == ["traceparent", "x-a", "x-b"])
        #expect(headers["x-a"] == .bool(true))
        #expect(headers["x-c"] == nil)
        headers["x-a"] = .int(7)
        headers["a"] = .string("first")
        headers["z"] = .string("last")
        headers["x-b"] = nil
        headers["absent"] = nil
        #expect(headers.keys == ["a", "traceparent", "x-a", "z"])
        #expect(headers["x-a"] == .int(7))
        #expect(headers.count == 4)
        #expect(headers.map(\.value) == [.string("first"), .string("t"), .int(7), .string("last")])
    }

    @Test("every order of the same entries gives the same table; a later duplicate replaces the earlier one")
    func sameEntriesSameTable() {
        let names = ["x-herald-schema", "traceparent", "x-herald-attempt", "x-herald-signature", "x-herald-producer"]
        let expected = AMQPHeaders(Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, AMQPHeaderValue.int(Int64($0))) }))
        #expect(expected.keys == names.sorted())
        for rotation in 0..<names.count {
            let rotated = Array(names[rotation...] + names[..<rotation])
            for order in [rotated, rotated.reversed()] {
                var headers = AMQPHeaders()
                for name in order { headers[name] = .int(Int64(names.firstIndex(of: name)!)) }
                #expect(headers == expected)
            }
        }
        let duplicated: AMQPHeaders = ["a": .int(1), "b": .int(2), "a": .int(3)]
        #expect(duplicated == ["a": .int(3), "b": .int(2)])
        let adjacent: AMQPHeaders = ["a": .int(1), "a": .int(3), "b": .int(2)]
        #expect(adjacent == duplicated)
        #expect(adjacent.count == 2)
        var replaced = AMQPHeaders()
        replaced["a"] = .int(1)
        replaced["a"] = .int(3)
        #expect(replaced == ["a": .int(3)])
    }

    @Test("equality compares names and values; filter keeps the order")
    func equalityAndFilter() {
        let headers: AMQPHeaders = ["a": .int(1), "b": .string("2"), "c": .unsupported]
        #expect(headers != ["a": .int(1), "b": .string("3"), "c": .unsupported])
        #expect(headers != ["a": .int(1), "b": .string("2")])
        #expect(headers.filter { $0.value != .unsupported } == ["b": .string("2"), "a": .int(1)])
        #expect(AMQPHeaders().isEmpty)
        #expect(headers.isEmpty == false)
    }
}
