import NIOCore

/// Runs a task's jobs on one NIO event loop, so a task that talks to a channel of that loop writes and
/// resumes on the loop's own thread instead of waking another thread for each.
///
/// `PostgresBatcher` runs its group commit this way on the PostgreSQL client's one loop: a batch's query
/// is written, its answer read and the next batch built without leaving that thread. On the global
/// pool, each batch paid two thread wake-ups (the write handed to the loop, the answer handed back),
/// each a few hundred microseconds on two busy cores, in the one path every send and job waits on.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
