import Synchronization

/// Group commit's queue: callers that arrive while `inFlight` batches are running wait, then go together
/// (at most `maximumBatch`) as the next batch, handed to `run`, which answers each waiting caller.
/// `PostgresBatcher` (admissions, claims, outcomes) runs on it.
final class Coalescer<Item: Sendable, Answer: Sendable>: Sendable {
    struct Waiting: Sendable {
        let item: Item
        let continuation: CheckedContinuation<Answer, any Error>
    }

    private let state = Mutex<(waiting: [Waiting], running: Int)>(([], 0))
    let inFlight: Int
    let maximumBatch: Int
    /// Where the draining task runs (nil: the global pool).
    let executor: (any TaskExecutor)?

    init(inFlight: Int, maximumBatch: Int, executor: (any TaskExecutor)? = nil) {
        self.inFlight = inFlight
        self.maximumBatch = maximumBatch
        self.executor = executor
    }

    /// Queues `item`; when no batch is running, this caller starts draining the queue with `run`.
    func submit(_ item: Item, run: @escaping @Sendable ([Waiting]) async -> Void) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state in
                state.waiting.append(Waiting(item: item, continuation: continuation))
                guard state.running < inFlight else { return false }
                state.running += 1
                return true
            }
            if start { Task(executorPreference: executor) { await self.drain(run) } }
        }
    }

    private func drain(_ run: @Sendable ([Waiting]) async -> Void) async {
        while true {
            let batch = state.withLock { state in
                let batch = Array(state.waiting.prefix(maximumBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.running -= 1 }
                return batch
            }
            if batch.isEmpty { return }
            await run(batch)
        }
    }
}
