import HeraldAMQP
import Logging
import Metrics
import ServiceLifecycle

/// `herald_queue_messages_ready{queue}` and `herald_queue_consumers{queue}` for the worker's queues
/// (work, retry, throttle, dead), read every `workers.<type>.queuePollInterval` with a passive
/// declare on the publisher connection. Every worker process reports them, so a dashboard takes the
/// maximum per queue; they are what the broker says, not an estimate.
struct QueueGauges: Service {
    let connection: AMQPConnection
    let queues: [String]
    let interval: Duration
    let logger: Logger

    /// Runs until shutdown and never throws: a service that ends or throws ends the whole group (the
    /// worker would exit, or exit with status 1 on SIGTERM).
    func run() async {
        guard interval > .zero else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            while Task.isCancelled == false {
                if connection.isConnected { await poll() }
                try? await Task.sleep(for: interval)
            }
        }
    }

    func poll() async {
        for queue in queues {
            do {
                let (ready, consumers) = try await connection.perform { try $0.inspectQueue(queue) }
                Gauge(label: "herald_queue_messages_ready", dimensions: [("queue", queue)]).record(ready)
                Gauge(label: "herald_queue_consumers", dimensions: [("queue", queue)]).record(consumers)
            } catch {
                // A queue that is missing or a connection that just dropped: the next poll tries again.
                logger.debug("cannot read queue depth", metadata: ["queue": .string(queue), "error": .string("\(error)")])
            }
        }
    }
}
