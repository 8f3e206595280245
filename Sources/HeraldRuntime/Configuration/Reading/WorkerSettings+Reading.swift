import HeraldCore

extension HeraldConfiguration.Workers {
    /// `workers`: each worker's block, with the defaults that suit its channel; `prefetch` defaults
    /// to `amqp.prefetch`.
    init(reader workers: ConfigReader, prefetch: Int) throws {
        func worker(_ name: String, concurrency: Int, delays: [Duration], port: Int) throws -> WorkerSettings {
            try WorkerSettings(
                reader: try workers.section(name),
                defaults: WorkerSettings.Defaults(concurrency: concurrency, prefetch: prefetch, retryDelays: delays, metricsPort: port))
        }
        self.init(
            sms: try worker("sms", concurrency: 64, delays: [.seconds(1), .seconds(5), .seconds(30), .seconds(120)], port: 9101),
            email: try worker("email", concurrency: 16, delays: [.seconds(5), .seconds(30), .seconds(120), .seconds(600)], port: 9102),
            push: try worker("push", concurrency: 64, delays: [.seconds(1), .seconds(5), .seconds(30)], port: 9103),
            apple: try worker("apple", concurrency: 8, delays: [.seconds(5), .seconds(30), .seconds(120), .seconds(600)], port: 9104))
        try workers.finish()
    }
}

extension WorkerSettings {
    /// What differs between the workers' blocks when a key is not set.
    struct Defaults {
        var concurrency: Int
        var prefetch: Int
        var retryDelays: [Duration]
        var metricsPort: Int
    }

    /// `workers.<type>`.
    init(reader section: ConfigReader, defaults: Defaults) throws {
        self.init(
            concurrency: try section.int("concurrency", default: defaults.concurrency, in: 1...10_000),
            prefetch: try section.int("prefetch", default: defaults.prefetch, in: 1...2000),
            retryDelays: try section.durationList("retryDelays", default: defaults.retryDelays, in: .milliseconds(100) ... .seconds(86_400)),
            throttleDelays: try section.durationList(
                "throttleDelays", default: [.milliseconds(250), .seconds(1), .seconds(5), .seconds(30)],
                in: .milliseconds(50) ... .seconds(86_400)
            ).sorted(),
            throttleHold: try section.duration("throttleHold", default: .seconds(5), in: .zero ... .seconds(60)),
            metricsPort: try section.int("metricsPort", default: defaults.metricsPort, in: 0...65535),
            shutdownGrace: try section.duration("shutdownGrace", default: .seconds(25), in: .seconds(1) ... .seconds(600)),
            retryUncertain: try section.bool("retryUncertain", default: false),
            queuePollInterval: try section.duration("queuePollInterval", default: .seconds(15), in: .zero ... .seconds(3600)),
            stuckAfter: try section.duration("stuckAfter", default: .seconds(60), in: .seconds(1) ... .seconds(86_400)))
        guard (1...10).contains(retryDelays.count) else {
            throw section.fail("retryDelays", "must list between 1 and 10 delays")
        }
        guard (1...10).contains(throttleDelays.count) else {
            throw section.fail("throttleDelays", "must list between 1 and 10 delays")
        }
        try section.finish()
    }
}
