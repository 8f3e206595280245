import Synchronization

/// Handles made once per distinct key and kept: metric handles whose labels vary per call (an
/// outcome, a country) but take few values. Making a metric handle goes through the metrics factory,
/// a registry lookup under its lock and an allocation, which on every send or job cost measurably.
public final class HandleCache<Handle: Sendable>: Sendable {
    /// Keyed by the labels themselves: joining them into one string cost an allocation and a copy on
    /// every send and job, for a key hashed and compared no faster.
    private let made = Mutex<[[String]: Handle]>([:])

    public init() {}

    /// The handle for `labels`, made by `make` the first time they are seen.
    public func handle(_ labels: String..., make: () -> Handle) -> Handle {
        made.withLock { made in
            if let handle = made[labels] { return handle }
            let handle = make()
            made[labels] = handle
            return handle
        }
    }
}
