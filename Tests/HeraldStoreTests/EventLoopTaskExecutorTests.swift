import NIOCore
import NIOPosix
import Testing

@testable import HeraldStore

/// Group commit's executor on PostgreSQL: a task that prefers it stays on the loop's thread.
@Suite("Event-loop task executor")
struct EventLoopTaskExecutorTests {
    @Test("a task preferring the executor runs on its loop, also after awaits that resume elsewhere, and so do its children")
    func staysOnTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let executor = EventLoopTaskExecutor(group.next())
        let loop = executor.loop
        let checks = await Task(executorPreference: executor) { () async -> [Bool] in
            var checks = [loop.inEventLoop]
            try? await Task.sleep(for: .milliseconds(2))
            checks.append(loop.inEventLoop)
            // A future completed on another loop's thread resumes this task back on its own loop.
            let other = MultiThreadedEventLoopGroup.singleton.next()
            _ = try? await other.submit { 1 }.get()
            checks.append(loop.inEventLoop)
            let child = await withTaskGroup(of: Bool.self) { children in
                children.addTask { loop.inEventLoop }
                return await children.next() ?? false
            }
            checks.append(child)
            return checks
        }.value
        #expect(checks == [true, true, true, true])
        // Without the preference the same task runs on the global pool, not on the loop.
        #expect(await Task { loop.inEventLoop }.value == false)
        try await group.shutdownGracefully()
    }
}
