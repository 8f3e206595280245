import ArgumentParser
import HeraldRuntime

/// herald-bench: starts stacks against fast fake providers and prints throughput, latency, CPU and
/// instruction figures. For developers (it is not installed with Herald); figures depend on the
/// machine, and nothing here is a pass/fail threshold. Each suite is a subcommand; `make bench` runs
/// `all`.
@main
struct HeraldBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench", abstract: "Measure Herald: throughput, latency, CPU and instructions per send, memory.",
        version: BuildInfo.versionLine,
        subcommands: [
            All.self, Performance.self, Spine.self, Limits.self, Store.self, Worker.self, Throttle.self, Push.self, Email.self, Profile.self,
            Instructions.self, Pair.self, WorkerPair.self, Providers.self, Passwords.self,
        ],
        defaultSubcommand: All.self)

    struct All: Suite {
        static let configuration = CommandConfiguration(abstract: "performance, then push, email, providers and passwords.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.performance()
            try await bench.pushThroughput()
            try await bench.emailThroughput()
            try await bench.failover()
            try await bench.adapterCost()
            try await bench.passwordSignIns()
        }
    }

    struct Passwords: Suite {
        static let configuration = CommandConfiguration(
            abstract: "signInWithPassword per second on one core and its CPU; sendVerificationCode's answer p99 beside a burst of sign-ins.")
        @OptionGroup var bench: Bench
        func measure() async throws { try await bench.passwordSignIns() }
    }

    struct Providers: Suite {
        static let configuration = CommandConfiguration(
            abstract: "Failover at --rate sends/s with the primary failing in the middle; each adapter's worker CPU per job beside the gateway's.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.failover()
            try await bench.adapterCost()
        }
    }

    struct Performance: Suite {
        static let configuration = CommandConfiguration(abstract: "Every throughput figure, medians of --runs, in one table.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.performance()
        }
    }

    struct Spine: Suite {
        static let configuration = CommandConfiguration(abstract: "Broker confirms, then API throughput, latency and memory per --store.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.spine()
        }
    }

    struct Limits: Suite {
        static let configuration = CommandConfiguration(abstract: "The limiter's decisions per second and what admission limits add to an answer.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.limitsSuite()
        }
    }

    struct Store: Suite {
        static let configuration = CommandConfiguration(
            abstract: "One admission at a time (the store's own round trip); on SQLite, an operator's scan of --report-rows beside a write.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.storeSuite()
        }
    }

    struct Worker: Suite {
        static let configuration = CommandConfiguration(abstract: "One herald-sms-worker draining a --backlog, per --store.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.workerSuite()
        }
    }

    struct Throttle: Suite {
        static let configuration = CommandConfiguration(abstract: "Jobs through the provider rate and through per-number spacing.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.throttleSuite()
        }
    }

    struct Push: Suite {
        static let configuration = CommandConfiguration(abstract: "The APNs channel: multiplexed and one at a time.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.pushThroughput()
        }
    }

    struct Email: Suite {
        static let configuration = CommandConfiguration(abstract: "Rendering sign-in mails, then submitting them over SMTP.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.emailThroughput()
        }
    }

    struct Profile: Suite {
        static let configuration = CommandConfiguration(abstract: "perf record of herald-api under c64 load, kept in --perf-data.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            try await bench.perfTopTen(store: bench.profileKind, keeping: bench.perfData, loadRuns: bench.runs, prefillRows: bench.prefill)
        }
    }

    struct Instructions: Suite {
        static let configuration = CommandConfiguration(
            abstract:
                "herald-api and herald-sms-worker under callgrind: instructions per send and per job, which neighbours do not move (needs valgrind).")
        @OptionGroup var bench: Bench
        func measure() async throws {
            _ = try await bench.instructionCounts()
            _ = try await bench.workerInstructionCounts()
        }
    }

    struct Pair: Suite {
        static let configuration = CommandConfiguration(
            abstract: "This build against --baseline-bin, loaded at the same time: herald-api CPU per send of each and their ratio.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            guard let baseline = bench.baselineBin else { throw ValidationError("pair needs --baseline-bin DIR") }
            try await bench.pairedComparison(baseline: baseline, store: bench.profileKind)
        }
    }

    struct WorkerPair: Suite {
        static let configuration = CommandConfiguration(
            commandName: "worker-pair", abstract: "The same for herald-sms-worker: both drain a --backlog at the same time, CPU per job.")
        @OptionGroup var bench: Bench
        func measure() async throws {
            guard let baseline = bench.baselineBin else { throw ValidationError("worker-pair needs --baseline-bin DIR") }
            try await bench.pairedDrain(baseline: baseline, store: bench.profileKind)
        }
    }
}

/// One suite: the options every suite shares, and what it measures once the opening line is printed.
protocol Suite: AsyncParsableCommand {
    var bench: Bench { get }
    func measure() async throws
}

extension Suite {
    func run() async throws {
        bench.header()
        try await measure()
    }
}
