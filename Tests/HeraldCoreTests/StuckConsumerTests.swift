import HeraldCore
import Testing

@Suite("Stuck consumers")
struct StuckConsumerTests {
    @Test("flagged only when it holds deliveries and the oldest job has waited past stuckAfter")
    func verdict() {
        #expect(StuckConsumer.isStuck(unacknowledged: 4, oldestWait: 61, stuckAfter: .seconds(60)))
        #expect(StuckConsumer.isStuck(unacknowledged: 4, oldestWait: 59, stuckAfter: .seconds(60)) == false, "not yet")
        #expect(StuckConsumer.isStuck(unacknowledged: 0, oldestWait: 600, stuckAfter: .seconds(60)) == false, "holds nothing")
        #expect(StuckConsumer.isStuck(unacknowledged: nil, oldestWait: 600, stuckAfter: .seconds(60)) == false, "no statistics yet")
        #expect(StuckConsumer.isStuck(unacknowledged: 4, oldestWait: nil, stuckAfter: .seconds(60)) == false, "nothing waiting")
    }
}
