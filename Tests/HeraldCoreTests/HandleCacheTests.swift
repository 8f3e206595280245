import HeraldCore
import Synchronization
import Testing

@Suite("Handle cache")
struct HandleCacheTests {
    final class Box: Sendable {}

    @Test("a handle is made once per distinct labels, and labels that would join to the same text stay apart")
    func onePerLabels() {
        let cache = HandleCache<Box>()
        let made = Atomic<Int>(0)
        func make() -> Box {
            made.add(1, ordering: .relaxed)
            return Box()
        }
        func handle(_ labels: String...) -> Box {
            labels.count == 2 ? cache.handle(labels[0], labels[1], make: make) : cache.handle(labels[0], labels[1], labels[2], make: make)
        }
        let sent = handle("demo", "sent")
        #expect(handle("demo", "sent") === sent)
        #expect(made.load(ordering: .relaxed) == 1)
        #expect(handle("demo", "refused") !== sent)
        #expect(handle("demo\u{0}", "sent") !== handle("demo", "\u{0}sent"))
        #expect(handle("demo", "sent", "GB") !== sent)
        #expect(made.load(ordering: .relaxed) == 5)
    }
}
