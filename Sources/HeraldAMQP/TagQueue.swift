/// Elements in ascending tag order (publish sequence numbers, delivery tags), taken mostly from the
/// front. The array keeps a head index and drops taken elements in bulk once they are the larger part,
/// so taking from the front costs no shifting; an element in the middle is found by binary search.
/// Shared by `ConfirmTracker` and `AckCoalescer`, whose broker settles tags the same way: one, or
/// every one up to a tag.
struct TagQueue<Element: Tagged> {
    private var elements: [Element] = []
    private var head = 0

    var count: Int { elements.count - head }
    var first: Element? { head < elements.count ? elements[head] : nil }

    /// Appends an element whose tag is above every tag in the queue.
    mutating func append(_ element: Element) {
        elements.append(element)
    }

    /// Removes and returns the first element, if there is one.
    mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        defer {
            head += 1
            compact()
        }
        return elements[head]
    }

    /// Removes and returns the leading elements that satisfy `predicate`, in order.
    mutating func removeFirst(while predicate: (Element) -> Bool) -> [Element] {
        let start = head
        while head < elements.count, predicate(elements[head]) { head += 1 }
        guard head > start else { return [] }
        let taken = Array(elements[start..<head])
        compact()
        return taken
    }

    /// Removes and returns the element with `tag`, wherever it is.
    mutating func remove(tag: UInt64) -> Element? {
        guard let index = position(of: tag) else { return nil }
        let element = elements[index]
        if index == head {
            head += 1
            compact()
        } else {
            elements.remove(at: index)
        }
        return element
    }

    func contains(tag: UInt64) -> Bool { position(of: tag) != nil }

    /// Empties the queue and returns what it held, in order.
    @discardableResult
    mutating func removeAll() -> [Element] {
        defer {
            elements.removeAll(keepingCapacity: true)
            head = 0
        }
        return Array(elements[head...])
    }

    private func position(of tag: UInt64) -> Int? {
        var low = head
        var high = elements.count
        while low < high {
            let middle = (low + high) / 2
            if elements[middle].tag < tag { low = middle + 1 } else { high = middle }
        }
        return low < elements.count && elements[low].tag == tag ? low : nil
    }

    private mutating func compact() {
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64, head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
    }
}

/// What `TagQueue` orders by.
protocol Tagged {
    var tag: UInt64 { get }
}

extension UInt64: Tagged {
    var tag: UInt64 { self }
}
