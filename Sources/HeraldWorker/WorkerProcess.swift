import HeraldAMQP
import HeraldCore
import HeraldRuntime
import Logging
import ServiceLifecycle
import UnixSignals

/// What every worker executable does once it has its job handler: connect its queue on the broker,
/// serve `/healthz`, `/readyz`, `/metrics` on `workers.<type>.metricsPort`, and run until SIGTERM or
/// SIGINT, draining first and closing the health endpoint last.
public enum WorkerProcess {
    public static func run(
        handler: any JobHandler, ledger: any DeliveryLedger & RateLimitStore & BreakerStore, keys: HeraldKeys, configuration: HeraldConfiguration,
        logger: Logger
    ) async throws {
        let workerConfiguration = configuration.workers.settings(for: handler.type)
        // Nothing connects yet: the queue's connections start when the worker runs.
        let settings = WorkerService.Settings(workerConfiguration)
        let queue = AMQPJobQueue(
            settings: configuration.amqp, topology: Topology(configuration: configuration), type: handler.type,
            prefetch: workerConfiguration.prefetch, instance: settings.instanceID, logger: logger)
        let worker = WorkerService(
            handler: handler, ledger: ledger, queue: queue, settings: settings, keys: keys,
            foreignJobs: ForeignJobPolicy(configuration: configuration), logger: logger)
        // Listening first: a second instance on the same port stops here, before it connects to the
        // broker or takes a delivery it could then only hand back.
        let health = try await HealthServer(
            host: configuration.http.metricsHost, port: workerConfiguration.metricsPort, idleTimeout: configuration.http.idleTimeout,
            maxConnections: configuration.http.maxConnections, isReady: { worker.isReady },
            onListening: { port in logger.info("health and metrics listening", metadata: ["port": .stringConvertible(port)]) }
        ).bindOrExit(key: "workers.\(handler.type.rawValue).metricsPort")
        let gauges = QueueGauges(
            connection: queue.publisher, queues: queue.topology.queues(handler.type), interval: workerConfiguration.queuePollInterval, logger: logger)
        // Services stop in reverse order: the worker drains first, the health endpoint goes last.
        let group = ServiceGroup(
            configuration: .init(services: [health, gauges, worker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
