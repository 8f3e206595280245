/// A message's headers: an AMQP field table, kept as a short list sorted by name.
///
/// Why not a dictionary: a job carries five headers and a delivery a few more, each message builds its
/// table once and reads a handful of names. A dictionary hashed every name on the way in and on every
/// lookup, and the encoder then sorted its entries again (wire tables are written in name order so that
/// the same message encodes to the same bytes): about 6,000 instructions per publish. Here names are
/// inserted in order (a job's are written already sorted, a delivery's arrive sorted, and a name that
/// sorts last is placed after one comparison) and found by a scan of a few short strings.
public struct AMQPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral, Sequence {
    public typealias Element = (key: String, value: AMQPHeaderValue)

    /// Sorted by name, names unique.
    private var entries: [Element] = []

    public init() {}

    /// A later duplicate name replaces the earlier one. Written in name order (as Herald's own are),
    /// the entries are taken as they are after one comparison per pair.
    public init(dictionaryLiteral elements: (String, AMQPHeaderValue)...) {
        var inOrder = true
        for index in elements.indices.dropFirst() where elements[index - 1].0 >= elements[index].0 {
            inOrder = false
            break
        }
        if inOrder {
            entries = elements.map { (key: $0.0, value: $0.1) }
        } else {
            entries.reserveCapacity(elements.count)
            for (name, value) in elements { self[name] = value }
        }
    }

    public init(_ dictionary: [String: AMQPHeaderValue]) {
        entries = dictionary.map { (key: $0.key, value: $0.value) }.sorted { $0.key < $1.key }
    }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }
    /// The names, in order.
    public var keys: [String] { entries.map(\.key) }

    /// The value under `name`; setting nil removes it.
    public subscript(name: String) -> AMQPHeaderValue? {
        get {
            for entry in entries where entry.key == name { return entry.value }
            return nil
        }
        set {
            let position = insertionPoint(name)
            let present = position < entries.count && entries[position].key == name
            switch (present, newValue) {
            case (true, let value?): entries[position].value = value
            case (true, nil): entries.remove(at: position)
            case (false, let value?): entries.insert((name, value), at: position)
            case (false, nil): break
            }
        }
    }

    /// Where `name` is or belongs. From the end: names usually arrive in order, so an append is one
    /// comparison.
    private func insertionPoint(_ name: String) -> Int {
        var position = entries.count
        while position > 0, name < entries[position - 1].key { position -= 1 }
        if position > 0, entries[position - 1].key == name { return position - 1 }
        return position
    }

    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> AMQPHeaders {
        var kept = AMQPHeaders()
        kept.entries = try entries.filter(isIncluded)
        return kept
    }

    public func makeIterator() -> IndexingIterator<[Element]> { entries.makeIterator() }

    public static func == (lhs: AMQPHeaders, rhs: AMQPHeaders) -> Bool {
        lhs.entries.elementsEqual(rhs.entries) { $0.key == $1.key && $0.value == $1.value }
    }
}
