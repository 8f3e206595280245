import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Testing

@testable import HeraldAMQP

@Suite("AMQP connection against a real broker")
struct AMQPConnectionTests {
    /// `count` messages to the sms route, one confirmed publish after another: bodies "0", "1", … and
    /// message ids `ids` followed by the same number.
    static func publishNumbered(_ count: Int, ids: String, to topology: Topology, on publisher: AMQPConnection) async throws {
        for index in 0..<count {
            try await publisher.publish(
                AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "sms", body: Data("\(index)".utf8), messageID: "\(ids)\(index)"))
        }
    }

    @Test("publishes with pipelined confirms and consumes with manual acks")
    func publishAndConsume() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { admin in
            let publisher = try await TestBroker.connection(.publisher)
            let count = 500
            // All publishes in flight at once on one connection; each resolves on its own confirm.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    group.addTask {
                        try await publisher.publish(
                            AMQPOutgoingMessage(
                                exchange: topology.exchange, routingKey: "sms", body: Data("m\(index)".utf8),
                                messageID: "id-\(index)", headers: ["n": .int(Int64(index))]))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await TestBroker.depth(topology.workQueue(.sms), using: admin) == count)

            let consumer = try await TestBroker.connection(.consumer(queue: topology.workQueue(.sms), prefetch: 50))
            var seen = Set<String>()
            for await delivery in consumer.deliveries {
                seen.insert(String(decoding: delivery.body, as: UTF8.self))
                #expect(delivery.messageID?.hasPrefix("id-") == true)
                #expect(delivery.redelivered == false)
                consumer.ack(delivery)
                if seen.count == count { break }
            }
            #expect(seen.count == count)
            #expect(await eventually { (try? await TestBroker.depth(topology.workQueue(.sms), using: admin)) == 0 })
            await consumer.shutdown()
            await publisher.shutdown()
        }
    }

    @Test("a body of several frames and every property and header kind arrive as published; a nack without requeue dead-letters")
    func propertiesAndLargeBodies() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { admin in
            let publisher = try await TestBroker.connection(.publisher)
            // Several frames at the 128 KiB frame-max the client negotiates.
            let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let headers: AMQPHeaders = ["s": .string("é x"), "i": .int(-7), "b": .bool(true)]
            try await publisher.publish(
                AMQPOutgoingMessage(
                    exchange: topology.exchange, routingKey: "sms", body: body, messageID: "big", type: "sms", contentType: "application/x-test",
                    headers: headers, timestamp: Date(timeIntervalSince1970: 1_800_000_000)))
            try await publisher.publish(AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "sms", body: Data(), messageID: "empty"))
            let consumer = try await TestBroker.connection(.consumer(queue: topology.workQueue(.sms), prefetch: 10))
            var received: [AMQPDelivery] = []
            for await delivery in consumer.deliveries {
                received.append(delivery)
                if received.count == 2 { break }
            }
            try #require(received.count == 2)
            #expect(received[0].body == body)
            #expect(received[0].messageID == "big")
            #expect(received[0].type == "sms")
            #expect(received[0].contentType == "application/x-test")
            #expect(received[0].headers == headers)
            #expect(received[1].body.isEmpty)
            #expect(received[1].messageID == "empty")
            consumer.ack(received[0])
            consumer.nack(received[1], requeue: false)
            #expect(await eventually { (try? await TestBroker.depth(topology.deadQueue(.sms), using: admin)) == 1 })
            #expect(await eventually { (try? await TestBroker.depth(topology.workQueue(.sms), using: admin)) == 0 })
            await consumer.shutdown()
            await publisher.shutdown()
        }
    }

    @Test("acks folded into multiple acks settle exactly what the consumer settled: nacked deliveries dead-letter or come back, none is lost")
    func foldedAcks() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { admin in
            let publisher = try await TestBroker.connection(.publisher)
            let count = 300
            try await Self.publishNumbered(count, ids: "f", to: topology, on: publisher)
            let consumer = try await TestBroker.connection(.consumer(queue: topology.workQueue(.sms), prefetch: count))
            var received: [AMQPDelivery] = []
            for await delivery in consumer.deliveries {
                received.append(delivery)
                if received.count == count { break }
            }
            try #require(received.count == count)
            // Mostly in delivery order, as a worker's group commit finishes jobs, with every 7th
            // dead-lettered, every 11th requeued, and the last third settled in a shuffled order.
            var order = Array(0..<count)
            var random = SplitMix64(seed: 7)
            order[(count * 2 / 3)...].shuffle(using: &random)
            var dead = Set<String>()
            var requeued = Set<String>()
            for index in order {
                let delivery = received[index]
                if index % 7 == 3 {
                    consumer.nack(delivery, requeue: false)
                    dead.insert(delivery.messageID ?? "")
                } else if index % 11 == 5 {
                    consumer.nack(delivery, requeue: true)
                    requeued.insert(delivery.messageID ?? "")
                } else {
                    consumer.ack(delivery)
                }
                if index % 50 == 0 { await Task.yield() }
            }
            var again = Set<String>()
            for await delivery in consumer.deliveries {
                #expect(delivery.redelivered)
                again.insert(delivery.messageID ?? "")
                consumer.ack(delivery)
                if again.count == requeued.count { break }
            }
            #expect(again == requeued)
            #expect(await eventually { (try? await TestBroker.depth(topology.deadQueue(.sms), using: admin)) == dead.count })
            // The last acks leave on the connection thread's next turn; wait until they are written
            // (a queue's depth counts only ready messages, so it cannot tell).
            let expected = count + requeued.count
            #expect(await eventually { consumer.settlementCounts.settlements == expected })
            let counts = consumer.settlementCounts
            #expect(counts.settlements == expected)
            // How many acks fold depends on how many settlements one turn of the connection thread finds,
            // so only that some were folded is asserted here; the pure tests pin the folding itself.
            #expect(counts.frames < counts.settlements, "\(counts.frames) frames for \(counts.settlements) settlements")
            // Every message was settled once: the channel is still open (an unknown tag would close it),
            // and closing it returns nothing to the queue (a delivery left unacked would come back).
            #expect(consumer.isConnected)
            await consumer.shutdown()
            let returned = await eventually(timeout: .seconds(1)) {
                ((try? await TestBroker.depth(topology.workQueue(.sms), using: admin)) ?? 0) > 0
            }
            #expect(!returned, "a delivery was left unacked and went back to the queue")
            await publisher.shutdown()
        }
    }

    @Test("a mandatory publish nobody can route fails as unroutable")
    func unroutable() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { _ in
            let publisher = try await TestBroker.connection(.publisher)
            await #expect(throws: AMQPError.self) {
                try await publisher.publish(
                    AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "nobody", body: Data("x".utf8), messageID: "lost"))
            }
            do {
                try await publisher.publish(
                    AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "nobody", body: Data(), messageID: "lost-2"))
            } catch let error as AMQPError {
                #expect(error.kind == .unroutable)
            }
            await publisher.shutdown()
        }
    }

    @Test("unacked deliveries come back redelivered after the consumer connection closes")
    func redeliveryAfterClose() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { admin in
            let publisher = try await TestBroker.connection(.publisher)
            for index in 0..<3 {
                try await publisher.publish(
                    AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "sms", body: Data("\(index)".utf8), messageID: "r\(index)"))
            }
            let first = try await TestBroker.connection(.consumer(queue: topology.workQueue(.sms), prefetch: 10))
            var received = 0
            for await _ in first.deliveries {
                received += 1
                if received == 3 { break }
            }
            await first.shutdown()
            let second = try await TestBroker.connection(.consumer(queue: topology.workQueue(.sms), prefetch: 10))
            var redelivered = 0
            for await delivery in second.deliveries {
                #expect(delivery.redelivered)
                second.ack(delivery)
                redelivered += 1
                if redelivered == 3 { break }
            }
            #expect(redelivered == 3)
            await second.shutdown()
            await publisher.shutdown()
            _ = admin
        }
    }

    @Test("peek leaves every message in place: a quorum queue holds them all again when peek returns")
    func peekLeavesMessagesInPlace() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { admin in
            let publisher = try await TestBroker.connection(.publisher)
            let count = 300
            try await Self.publishNumbered(count, ids: "p", to: topology, on: publisher)
            // Several rounds: the queue takes the messages back after the channel's close is answered, so
            // reading its depth at once after a bare close finds some still missing.
            for _ in 0..<5 {
                let seen = try await admin.peek(topology.workQueue(.sms))
                #expect(seen.count == count)
                #expect(try await TestBroker.depth(topology.workQueue(.sms), using: admin) == count)
            }
            // A limited peek of a longer queue: the ones it took must be back too, not only as many
            // messages as it took (the first version returned while they were still out, which only
            // showed with the broker busy, as in the whole suite: hence the load on another queue).
            // Handed back messages need not keep their places in the queue, only stay in it.
            let busy = try await TestBroker.connection(.publisher)
            let load = Task {
                while Task.isCancelled == false {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<200 {
                            group.addTask {
                                try await busy.publish(AMQPOutgoingMessage(exchange: topology.exchange, routingKey: "email", body: Data(count: 2048)))
                            }
                        }
                        try await group.waitForAll()
                    }
                }
            }
            for limit in [7, 150, 299, 7, 150, 299] {
                let limited = try await admin.peek(topology.workQueue(.sms), limit: limit)
                #expect(Set(limited.compactMap(\.messageID)).count == limit)
                #expect(limited.allSatisfy { ($0.messageID ?? "").hasPrefix("p") })
                #expect(try await TestBroker.depth(topology.workQueue(.sms), using: admin) == count)
            }
            load.cancel()
            _ = await load.result
            await busy.shutdown()
            await publisher.shutdown()
        }
    }

    @Test("retry queues hand messages back to the work queue after their TTL")
    func retryQueueRoundTrip() async throws {
        let topology = TestBroker.topology(retryDelays: [.milliseconds(200)])
        try await TestBroker.withTopology(topology) { admin in
            let publisher = try await TestBroker.connection(.publisher)
            try await publisher.publish(
                AMQPOutgoingMessage(
                    exchange: "", routingKey: topology.retryQueue(.sms, delay: .milliseconds(200)), body: Data("later".utf8),
                    messageID: "delayed"))
            #expect(await eventually { (try? await TestBroker.depth(topology.workQueue(.sms), using: admin)) == 1 })
            let messages = try await TestBroker.drain(topology.workQueue(.sms), using: admin)
            #expect(messages.map(\.messageID) == ["delayed"])
            #expect(messages.first?.routingKey == "sms")
            await publisher.shutdown()
        }
    }

    @Test("redeclaring a queue with different arguments is reported with the queue's name")
    func conflictingDeclaration() async throws {
        let topology = TestBroker.topology()
        try await TestBroker.withTopology(topology) { admin in
            var conflicting = topology
            conflicting.deliveryLimit = topology.deliveryLimit + 1
            let changed = conflicting
            do {
                try await admin.perform { try changed.declare(on: $0) }
                Issue.record("a conflicting declaration should fail")
            } catch let error as AMQPError {
                #expect(error.kind == .serverClosed(code: 406))
                #expect(error.detail.contains(topology.workQueue(.sms)))
            }
            // The spare channel reopens for the next RPC.
            #expect(try await TestBroker.depth(topology.workQueue(.sms), using: admin) == 0)
        }
    }

    @Test("publishing while no broker answers fails fast with notConnected")
    func noBroker() async throws {
        let connection = AMQPConnection(
            options: .init(endpoint: AMQPEndpoint(url: "amqp://guest:guest@127.0.0.1:1/%2f")!, role: .publisher, name: "nobroker"),
            logger: quietLogger())
        connection.start()
        let started = ContinuousClock.now
        do {
            try await connection.publish(AMQPOutgoingMessage(exchange: "x", routingKey: "y", body: Data()))
            Issue.record("publish should fail")
        } catch let error as AMQPError {
            #expect(error.kind == .notConnected)
        }
        #expect(ContinuousClock.now - started < .seconds(2))
        await connection.shutdown()
    }
}
