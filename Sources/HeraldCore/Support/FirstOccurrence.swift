import Synchronization

/// True the first time it is asked, false ever after, from any thread: for a warning that a request
/// could otherwise repeat on every line of the log.
public final class FirstOccurrence: Sendable {
    private let seen = Atomic<Bool>(false)

    public init() {}

    public func isFirst() -> Bool { seen.exchange(true, ordering: .relaxed) == false }
}
