import HeraldTesting
import Testing

@testable import HeraldAMQP

/// Folding a consumer's acks without a broker: which frames a turn writes, and, against a model of
/// the broker's unacknowledged deliveries, that a multiple ack never settles a delivery the consumer
/// did not ack.
@Suite("Ack folding (pure)")
struct AckCoalescerTests {
    static func coalescer(delivered tags: ClosedRange<UInt64>) -> AckCoalescer {
        var coalescer = AckCoalescer()
        for tag in tags { coalescer.delivered(tag) }
        return coalescer
    }

    @Test("acks of a turn that run from the oldest delivery become one multiple ack; a run of one stays single")
    func run() {
        var written: [AckCoalescer.Frame]
        var coalescer = Self.coalescer(delivered: 1...10)
        for tag: UInt64 in [3, 1, 2, 4] { coalescer.ack(tag) }
        written = coalescer.frames()
        #expect(written == [.ack(4, multiple: true)])
        coalescer.ack(5)
        written = coalescer.frames()
        #expect(written == [.ack(5, multiple: false)])
        written = coalescer.frames()
        #expect(written.isEmpty)
        #expect(coalescer.tracked == 5)
    }

    @Test("acks beyond an unsettled delivery go one by one, and a later run steps over them")
    func ahead() {
        var written: [AckCoalescer.Frame]
        var coalescer = Self.coalescer(delivered: 1...10)
        for tag: UInt64 in [2, 3, 5] { coalescer.ack(tag) }
        written = coalescer.frames()
        #expect(written == [.ack(2, multiple: false), .ack(3, multiple: false), .ack(5, multiple: false)])
        coalescer.ack(1)
        coalescer.ack(4)
        written = coalescer.frames()
        #expect(written == [.ack(4, multiple: true)])
        // 5 was stepped over with the run: acking 6 alone is a run of one.
        coalescer.ack(6)
        written = coalescer.frames()
        #expect(written == [.ack(6, multiple: false)])
        #expect(coalescer.tracked == 4)
    }

    @Test("nacks are written first and never folded; a run covers a nacked delivery only after its nack")
    func nacks() {
        var written: [AckCoalescer.Frame]
        var coalescer = Self.coalescer(delivered: 1...6)
        coalescer.ack(1)
        coalescer.nack(2, requeue: false)
        coalescer.ack(3)
        coalescer.nack(5, requeue: true)
        written = coalescer.frames()
        #expect(written == [.nack(2, requeue: false), .nack(5, requeue: true), .ack(3, multiple: true)])
        // 4 is unsettled, 5 nacked ahead of it; acking 4 and 6 folds over 5.
        coalescer.ack(6)
        coalescer.ack(4)
        written = coalescer.frames()
        #expect(written == [.ack(6, multiple: true)])
        #expect(coalescer.tracked == 0)
    }

    @Test("a run of nacks alone writes no ack; tags never delivered are acked alone and not tracked")
    func untracked() {
        var written: [AckCoalescer.Frame]
        var coalescer = Self.coalescer(delivered: 1...3)
        coalescer.nack(1, requeue: false)
        coalescer.nack(2, requeue: false)
        written = coalescer.frames()
        #expect(written == [.nack(1, requeue: false), .nack(2, requeue: false)])
        coalescer.ack(99)
        coalescer.ack(3)
        written = coalescer.frames()
        #expect(written == [.ack(3, multiple: false), .ack(99, multiple: false)])
        #expect(coalescer.tracked == 0)
        // A tag out of order (no conforming broker sends one) is not tracked either.
        coalescer.delivered(7)
        coalescer.delivered(5)
        coalescer.ack(5)
        coalescer.ack(7)
        written = coalescer.frames()
        #expect(written == [.ack(7, multiple: false), .ack(5, multiple: false)])
    }

    @Test("reset forgets deliveries and unwritten settlements of the lost connection")
    func reset() {
        var written: [AckCoalescer.Frame]
        var coalescer = Self.coalescer(delivered: 1...4)
        coalescer.ack(1)
        coalescer.reset()
        #expect(coalescer.hasSettlements == false)
        #expect(coalescer.tracked == 0)
        coalescer.delivered(1)
        coalescer.delivered(2)
        coalescer.ack(1)
        coalescer.ack(2)
        written = coalescer.frames()
        #expect(written == [.ack(2, multiple: true)])
    }

    /// The broker's side: unacknowledged deliveries, and what settled each one.
    struct BrokerModel {
        enum Outcome: Equatable {
            case acked
            case nacked(requeue: Bool)
        }
        var unacked: Set<UInt64> = []
        var outcomes: [UInt64: Outcome] = [:]

        /// Applies a frame as RabbitMQ does; a tag that is not unacknowledged is a channel error.
        mutating func apply(_ frame: AckCoalescer.Frame) -> Bool {
            switch frame {
            case .ack(let tag, let multiple):
                guard unacked.contains(tag) else { return false }
                let covered = multiple ? unacked.filter { $0 <= tag } : [tag]
                for settled in covered {
                    unacked.remove(settled)
                    outcomes[settled] = .acked
                }
            case .nack(let tag, let requeue):
                guard unacked.remove(tag) != nil else { return false }
                outcomes[tag] = .nacked(requeue: requeue)
            }
            return true
        }
    }

    @Test("random deliveries, settlements and turns: every delivery ends as the consumer settled it, with fewer frames")
    func randomTurns() {
        var random = SplitMix64(seed: 0x5EED)
        var frameCount = 0
        var settlementCount = 0
        for _ in 0..<300 {
            var coalescer = AckCoalescer()
            var broker = BrokerModel()
            var wanted: [UInt64: BrokerModel.Outcome] = [:]
            var inFlight: [UInt64] = []
            var next: UInt64 = 1
            let total = 1 + Int.random(in: 0..<120, using: &random)
            while next <= total || inFlight.isEmpty == false {
                // Deliveries up to a prefetch of 32.
                while next <= total, inFlight.count < 32, Int.random(in: 0..<3, using: &random) != 0 {
                    coalescer.delivered(next)
                    broker.unacked.insert(next)
                    inFlight.append(next)
                    next += 1
                }
                // A turn: some jobs finish, mostly oldest first, as a group commit's answers do.
                let finishing = Int.random(in: 0..<inFlight.count + 1, using: &random)
                for _ in 0..<finishing {
                    let pick = Int.random(in: 0..<4, using: &random) == 0 ? Int.random(in: 0..<inFlight.count, using: &random) : 0
                    let tag = inFlight.remove(at: pick)
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0:
                        coalescer.nack(tag, requeue: false)
                        wanted[tag] = .nacked(requeue: false)
                    case 1:
                        coalescer.nack(tag, requeue: true)
                        wanted[tag] = .nacked(requeue: true)
                    default:
                        coalescer.ack(tag)
                        wanted[tag] = .acked
                    }
                    settlementCount += 1
                }
                for frame in coalescer.frames() {
                    let accepted = broker.apply(frame)
                    #expect(accepted, "the broker refused \(frame)")
                    frameCount += 1
                }
            }
            #expect(broker.unacked.isEmpty)
            #expect(broker.outcomes == wanted)
            #expect(coalescer.tracked == 0)
        }
        #expect(frameCount < settlementCount * 2 / 3, "\(frameCount) frames for \(settlementCount) settlements")
    }
}
