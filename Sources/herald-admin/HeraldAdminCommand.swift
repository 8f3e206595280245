import ArgumentParser
import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldStore
import Logging

/// herald-admin: operator tasks against the broker (and, later, the store).
@main
struct HeraldAdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-admin", abstract: "Operate a Herald installation.", version: BuildInfo.versionLine,
        subcommands: [Check.self, Topology.self, DeadLetters.self, Messages.self, Providers.self, Limits.self, Store.self, Users.self])

    /// `--config` goes before or after the subcommand (see `CommonOptions.movingConfigLast`).
    static func main() async {
        await main(CommonOptions.movingConfigLast(Array(CommandLine.arguments.dropFirst())))
    }

    struct Topology: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Broker topology: exchanges, work, retry and dead-letter queues.", subcommands: [Declare.self, Status.self, Definitions.self])
    }

    struct Limits: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rate limits and prefix blocks, for support staff.", subcommands: [Show.self, Reset.self, Blocks.self])
    }

    struct DeadLetters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dead-letters", abstract: "Inspect, replay and purge dead-lettered jobs.",
            subcommands: [List.self, Show.self, Replay.self, Purge.self])
    }
}

extension HeraldAdminCommand {
    /// `herald-admin check`: validates the configuration (exit 78 when it is invalid, as every executable
    /// does), then lists the settings that are valid but unsafe outside devMode and exits 1 when there
    /// is any, so a deployment's CI can refuse them.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate the configuration and list unsafe settings (exit 1 when there is any).")
        @OptionGroup var options: CommonOptions

        func run() async throws {
            let (configuration, path) = try ConfigurationLoader.loadOrExitCode(path: options.config)
            let findings = UnsafeSettings.findings(in: configuration)
            print("\(path): valid\(configuration.devMode ? " (devMode: unsafe settings are not checked)" : "")")
            for finding in findings { print("unsafe\t\(finding.key)\t\(finding.problem)") }
            if findings.isEmpty == false { throw ExitCode(1) }
        }
    }
}

/// Connects a short-lived publisher connection for admin work.
func adminConnection(_ options: CommonOptions) async throws -> (HeraldConfiguration, HeraldAMQP.Topology, AMQPConnection) {
    let (configuration, _) = try ConfigurationLoader.loadOrExitCode(path: options.config)
    HeraldLogging.bootstrap(.init(level: "warning", format: configuration.logging.format))
    let connection = AMQPConnection(
        options: .init(configuration.amqp, role: .publisher, name: "herald-admin"), logger: Logger(label: "herald-admin"))
    connection.start()
    guard await connection.waitUntilConnected(timeout: configuration.amqp.connectTimeout + .seconds(2)) else {
        await connection.shutdown()
        throw ValidationError("cannot connect to the broker at \(configuration.amqp.endpoints.map(\.redacted).joined(separator: " or "))")
    }
    return (configuration, HeraldAMQP.Topology(configuration: configuration), connection)
}

extension HeraldAdminCommand.Topology {
    struct Declare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Declare the topology (idempotent; the API and workers also do this).")
        @OptionGroup var options: CommonOptions

        func run() async throws {
            let (configuration, topology, connection) = try await adminConnection(options)
            defer { Task { await connection.shutdown() } }
            do {
                try await connection.perform { try topology.declare(on: $0, types: HeraldAMQP.Topology.types(in: configuration)) }
            } catch let error as AMQPError {
                await connection.shutdown()
                throw ValidationError(
                    "\(error.detail)\nA queue exists with different arguments; delete it (after draining) or choose another amqp.exchange.")
            }
            for type in HeraldAMQP.Topology.types(in: configuration) {
                print(
                    "declared exchange \(topology.exchange) and \(topology.deadLetterExchange); queues: \(topology.queues(type).joined(separator: ", "))"
                )
            }
            await connection.shutdown()
        }
    }

    /// `herald-admin topology definitions`: the topology as RabbitMQ definitions, without a broker.
    struct Definitions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the exchanges, queues and bindings Herald declares as a RabbitMQ definitions file (rabbitmqctl import_definitions).")
        @OptionGroup var options: CommonOptions
        @Option(help: "Virtual host (default: the one in amqp.url).") var vhost: String?
        @Option(help: "User that gets permissions on Herald's exchanges and queues (no password: set one with rabbitmqctl change_password).")
        var user: String = "herald"

        func run() async throws {
            let (configuration, _) = try ConfigurationLoader.loadOrExitCode(path: options.config)
            let topology = HeraldAMQP.Topology(configuration: configuration)
            Swift.print(try topology.definitions(virtualHost: vhost ?? configuration.amqp.endpoints[0].virtualHost, user: user), terminator: "")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show each queue's ready, unacknowledged and consumers; exit status 3 when a work queue has no consumer.",
            discussion: """
                Unacknowledged counts come from RabbitMQ's management API when amqp.managementUrl is set (AMQP's \
                queue.declare-ok reports ready messages and consumers only); without it they show as unacked=?.
                """)
        @OptionGroup var options: CommonOptions
        @Option(name: .customLong("type"), help: "Job types whose work queues must have a consumer (repeatable; default: every type).")
        var types: [String] = []
        @OptionGroup var listing: ListingOptions

        func run() async throws {
            let required = try types.map(JobType.named)
            let (configuration, topology, connection) = try await adminConnection(options)
            let management = configuration.amqp.managementURL.map { BrokerManagement(baseURL: $0, endpoint: configuration.amqp.endpoints[0]) }
            var managementProblem: String?
            var unserved: [String] = []
            var rows = Listing("queue", "ready", "unacked", "consumers", "state")
            for type in HeraldAMQP.Topology.types(in: configuration) {
                let mustBeServed = required.isEmpty || required.contains(type)
                for queue in topology.queues(type) {
                    do {
                        // Ready and consumers from AMQP (always there); unacknowledged from the management API.
                        let (messages, consumers) = try await connection.perform { try $0.inspectQueue(queue) }
                        var unacked = "?"
                        if let management, managementProblem == nil {
                            do {
                                if let figures = try await management.queue(queue) { unacked = String(figures.unacknowledged) }
                            } catch {
                                managementProblem = "\(error)"
                            }
                        }
                        rows.add(
                            .text(queue), .number(messages), Int(unacked).map(Listing.Value.number) ?? .unknown, .number(consumers), .text("ok"),
                            text: "\(queue)\tready=\(messages)\tunacked=\(unacked)\tconsumers=\(consumers)")
                        if queue == topology.workQueue(type), consumers == 0, mustBeServed { unserved.append(queue) }
                    } catch {
                        rows.add(
                            .text(queue), .unknown, .unknown, .unknown, .text("missing"),
                            text: "\(queue)\tmissing (run: herald-admin topology declare)")
                        if queue == topology.workQueue(type), mustBeServed { unserved.append(queue) }
                    }
                }
            }
            await connection.shutdown()
            var extra: [String: Any] = ["unserved": unserved]
            if let managementProblem { extra["unackedUnavailable"] = managementProblem }
            try rows.write(listing, key: "queues", extra: extra)
            if listing.json == false {
                if let managementProblem { print("unacked counts unavailable: \(managementProblem)") }
                if unserved.isEmpty == false {
                    print("no consumer on: \(unserved.joined(separator: ", ")) (no worker reads them; jobs wait until one does)")
                }
            }
            if unserved.isEmpty == false { throw ExitCode(3) }
        }
    }
}

extension HeraldAdminCommand.DeadLetters {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List dead-lettered jobs with their reasons (they stay in the queue).")
        @OptionGroup var options: CommonOptions
        @Option(help: "Job type.") var type: String = "sms"
        @OptionGroup var listing: ListingOptions

        func run() async throws {
            let (_, topology, connection) = try await adminConnection(options)
            let jobType = try JobType.named(type)
            let messages = try await connection.peek(topology.deadQueue(jobType))
            await connection.shutdown()
            var rows = Listing("id", "failedAt", "reason")
            for message in messages {
                rows.add(
                    .text(message.messageID ?? "-"), .text(message.headerText(JobHeader.failedAt) ?? "-"),
                    .text(message.headerText(JobHeader.reason) ?? "-"))
            }
            try rows.write(listing, key: "deadLetters", extra: ["queue": topology.deadQueue(jobType)])
            if listing.json == false { print("\(messages.count) dead-lettered \(type) job(s) in \(topology.deadQueue(jobType))") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one dead-lettered job: why and when it failed, and what it was (destination masked; no code or text).")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The job id (the AMQP message id).") var id: String
        @Option(help: "Job type.") var type: String = "sms"

        func run() async throws {
            let (_, topology, connection) = try await adminConnection(options)
            let jobType = try JobType.named(type)
            let found = try await connection.peek(topology.deadQueue(jobType)).first { $0.messageID?.lowercased() == id.lowercased() }
            await connection.shutdown()
            guard let message = found else {
                print("no dead-lettered \(type) job \(id) in \(topology.deadQueue(jobType))")
                throw ExitCode(4)
            }
            var lines = [
                ("id", message.messageID ?? "-"), ("reason", message.headerText(JobHeader.reason) ?? "-"),
                ("failed at", message.headerText(JobHeader.failedAt) ?? "-"), ("attempts", message.headerText(JobHeader.attempt) ?? "-"),
            ]
            if let job = try? JobCodec.decode(message.body) {
                lines += [
                    ("type", job.type.rawValue), ("project", job.project), ("to", MaskedDestination.mask(job.recipient, type: job.type)),
                    ("template", job.templateName), ("locale", job.locale ?? "-"), ("created at", Timestamp.format(job.createdAt)),
                    ("expires at", Timestamp.format(job.expiresAt) + (job.expiresAt < Date() ? " (expired: a replay would be dropped)" : "")),
                ]
            } else {
                lines.append(("body", "\(message.body.count) bytes, not a job this build reads"))
            }
            for (label, value) in lines { print(label.padding(toLength: 11, withPad: " ", startingAt: 0) + value) }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Move dead-lettered jobs (all, up to --limit, or the one named) back to their work queue, to be sent again (each is removed only after the broker confirmed the copy)."
        )
        @OptionGroup var options: CommonOptions
        @Argument(help: "Replay only this job id.") var id: String?
        @Option(help: "Job type.") var type: String = "sms"
        @Option(help: "At most this many jobs.") var limit: Int = 1000

        func run() async throws {
            let (configuration, topology, connection) = try await adminConnection(options)
            let jobType = try JobType.named(type)
            let store = try await SQLStore.open(configuration.store, logger: Logger(label: "herald-admin"))
            let deadQueue = topology.deadQueue(jobType)
            // The ledger says "failed"; each job is marked pending again so a worker sends it.
            let replayed = try await DeadLetters.replay(
                connection: connection, topology: topology, type: jobType, id: id, limit: limit,
                resetLedger: { jobID in
                    try await store.recordDelivery(jobID: jobID, status: .pending, reason: "replayed by herald-admin", now: Date())
                },
                progress: { done, total in print("replayed \(done) of \(total)…") })
            await connection.shutdown()
            await store.close()
            if let id, replayed == 0 {
                print("no dead-lettered \(type) job \(id) in \(deadQueue)")
                throw ExitCode(4)
            }
            print("replayed \(replayed) \(type) job(s); jobs already past expiresAt will be dropped by the worker")
        }
    }

    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Delete dead-lettered jobs that failed longer ago than --older-than (the queue is in failure order; it stops at the first younger one)."
        )
        @OptionGroup var options: CommonOptions
        @Option(help: "Job type.") var type: String = "sms"
        @Option(help: "Age, like 7d or 12h.") var olderThan: String

        func run() async throws {
            guard let age = DurationText.parse(olderThan), age > .zero else { throw ValidationError("--older-than: a duration like 7d or 12h") }
            let (_, topology, connection) = try await adminConnection(options)
            let jobType = try JobType.named(type)
            let cutoff = Date().addingTimeInterval(-Double(age.components.seconds))
            let deadQueue = topology.deadQueue(jobType)
            var purged = 0
            while let message = try await connection.perform({ try $0.get(deadQueue, acknowledge: false) }) {
                // A job the broker dead-lettered itself (rejected) has no failure time: it is kept.
                guard let failedAt = message.headerText(JobHeader.failedAt).flatMap(Timestamp.parse), failedAt < cutoff else { break }
                try await connection.perform { try $0.ack(message) }
                purged += 1
            }
            try await connection.perform { try $0.closeAndReopen() }
            await connection.shutdown()
            print("purged \(purged) \(type) job(s) that failed before \(Timestamp.format(cutoff))")
        }
    }
}

extension JobType {
    static func named(_ name: String) throws -> JobType {
        guard let type = JobType(rawValue: name) else { throw ValidationError("unknown job type \(name) (sms, email, push or apple)") }
        return type
    }
}

/// The store named by the configuration, for commands that need no broker.
func adminStore(_ options: CommonOptions, migrate: Bool = true) async throws -> (HeraldConfiguration, SQLStore) {
    let (configuration, _) = try ConfigurationLoader.loadOrExitCode(path: options.config)
    HeraldLogging.bootstrap(.init(level: "warning", format: configuration.logging.format))
    return (configuration, try await SQLStore.open(configuration.store, migrate: migrate, logger: Logger(label: "herald-admin")))
}

extension HeraldAdminCommand {
    struct Store: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The shared store (SQLite or PostgreSQL): schema migrations, status, copying between stores.",
            subcommands: [Migrate.self, Status.self, Copy.self])

        /// `herald-admin store migrate`: what every process also does at start-up.
        struct Migrate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Bring the store's schema up to date (every Herald process also does this at start-up, under a lock).")
            @OptionGroup var options: CommonOptions

            func run() async throws {
                let (configuration, store) = try await adminStore(options, migrate: false)
                let applied: [Int]
                if case .postgres(let location) = configuration.store.location {
                    applied = try await store.migrate(schema: location.schema)
                } else {
                    applied = try await store.migrate()
                }
                let status = try await store.status(rows: .none)
                print(
                    applied.isEmpty
                        ? "store: schema already at version \(status.version)"
                        : "store: applied versions \(applied.map(String.init).joined(separator: ", ")); schema now at version \(status.version)")
                await store.close()
            }
        }

        /// `herald-admin store copy --from sqlite:… --to postgres://…`: moving to several machines.
        struct Copy: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Copy every table (users, sessions, oob codes, limits, the delivery ledger …) from one store into another.",
                discussion: """
                    Both stores are migrated to this build's schema first. Rows the target already has are left alone, so \
                    the copy can run again (after an interruption, or just before switching over) and adds only what is \
                    missing. Stop the herald processes that write to the source first, or copy again right before switching.
                    """)
            @Option(help: "The store to read: sqlite:<path> or postgres://…") var from: String
            @Option(help: "The store to write: postgres://… or sqlite:<path>") var to: String
            @Option(help: "CA file (PEM) for a PostgreSQL server's certificate.") var caFile: String?
            @Option(help: "Rows per transaction.") var batch: Int = 500

            func run() async throws {
                let logger = Logger(label: "herald-admin")
                func open(_ url: String) async throws -> SQLStore {
                    let location: StoreLocation
                    do throws(StoreLocationError) {
                        location = try StoreLocation(parsing: url)
                    } catch {
                        throw ValidationError("\(url.hasPrefix("sqlite:") ? url : "the store URL") \(error.description)")
                    }
                    let caFile: String? = if case .postgres = location { self.caFile } else { nil }
                    return try await SQLStore.open(.init(url: url, location: location, poolSize: 4, caFile: caFile), logger: logger)
                }
                let source = try await open(from)
                let target = try await open(to)
                let interactive = isatty(STDOUT_FILENO) == 1
                let results = try await source.copy(to: target, batchSize: max(1, batch)) { table, copied, total in
                    if interactive {
                        // The carriage return is this line's own (a progress line rewritten in place).
                        Swift.print("\rcopy: \(table) \(copied)/\(total)", terminator: "")
                        fflush(nil)
                    } else if copied == total || copied % (max(1, batch) * 20) == 0 {
                        print("copy: \(table) \(copied)/\(total)")
                    }
                }
                if interactive { print("") }
                for result in results { print("\(result.table)\t\(result.rows) rows\t\(result.inserted) new") }
                print(
                    "copied \(results.map(\.rows).reduce(0, +)) rows, \(results.map(\.inserted).reduce(0, +)) of them new, into \(try StoreLocation(parsing: to).redacted)"
                )
                await source.close()
                await target.close()
            }
        }

        /// `herald-admin store status`: backend, schema version, rows per table, and on PostgreSQL the
        /// oldest snapshot another connection holds; never migrates.
        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the store's backend, schema version and rows per table.")
            @OptionGroup var options: CommonOptions
            @Flag(
                help:
                    "Count every table's rows (on PostgreSQL a scan of each, holding a snapshot that slows admissions while it lasts; by default PostgreSQL's own estimates)."
            ) var exactRows = false

            func run() async throws {
                let (configuration, store) = try await adminStore(options, migrate: false)
                let status = try await store.status(rows: exactRows ? .exact : .estimated)
                print("backend\t\(status.backend.rawValue)\t\(configuration.store.location.redacted)")
                print("durability\t\(status.durability)")
                let behind = status.version < status.latest ? " (behind: run herald-admin store migrate)" : ""
                print("schema\t\(status.version)\tof \(status.latest) known to this build\(behind)")
                for (table, rows) in status.rows {
                    print("rows\t\(table)\t\(status.rowsEstimated ? "~\(rows) (estimated; --exact-rows counts)" : "\(rows)")")
                }
                if status.version >= Migrations.turnsVersion {
                    print("housekeeping\t\(HousekeepingTurn.describe(try await store.turnHolder(HousekeepingTurn.name), now: Date()))")
                }
                if status.backend == .postgres {
                    if let holder = try await store.oldestSnapshot() {
                        // Minutes of it slow every admission: the rows every send updates keep their old versions.
                        let warning =
                            holder.seconds >= 300 ? "\t(long: admissions slow down while it lasts; see docs/several-machines.md)" : ""
                        let seconds = String(format: "%.0f", holder.seconds)
                        print("snapshot\toldest held \(seconds) s by pid \(holder.pid) (\(holder.application), \(holder.state))\(warning)")
                    } else {
                        print("snapshot\tnone held by another connection")
                    }
                }
                await store.close()
            }
        }
    }
}

extension HeraldAdminCommand.Limits {
    /// `herald-admin limits show number +15555550100`
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show every limit kept for a subject: number, ip, project, country, prefix, checks, provider or spacing.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "Kind: number, ip, project, country, prefix, checks, provider, spacing.") var kind: String
        @Argument(help: "Subject: +15555550100, 203.0.113.7, 2001:db8:0:1::/64, US, +4479, http …") var subject: String
        @Option(help: "Only this project.") var project: String?
        @OptionGroup var listing: ListingOptions

        func run() async throws {
            guard LimitKind(rawValue: kind) != nil else { throw ValidationError("unknown kind '\(kind)'") }
            let (_, store) = try await adminStore(options)
            let states = try await store.rateStates(kind: kind, subject: LimitCheck.subject(subject, kind: kind), project: project)
            let now = Date().microsecondsSince1970
            var rows = Listing("project", "policy", "remaining", "nextIn", "fullAgainIn")
            for (key, tat) in states {
                guard let parts = LimitCheck.parse(key), let policy = RatePolicy.parse(parts.policy) else { continue }
                let parameters = GCRA.Parameters(policy)
                let remaining = GCRA.remaining(tat: tat, now: now, parameters: parameters)
                let wait = remaining > 0 ? 0 : max(0, tat + parameters.interval - parameters.tolerance - now)
                let next = String(format: "%.1f", Double(wait) / 1e6)
                let full = String(format: "%.0f", Double(max(0, tat - now)) / 1e6)
                rows.add(
                    .text(parts.project), .text(parts.policy), .number(Int(remaining)), .text(next + " s"), .text(full + " s"),
                    text: "\(parts.project)\t\(parts.policy)\tremaining=\(remaining)\tnext in \(next) s\tfull again in \(full) s")
            }
            try rows.write(listing, key: "limits", extra: ["kind": kind, "subject": subject])
            if states.isEmpty, listing.json == false { print("no limit state for \(kind) \(subject): it has the full allowance") }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget the limits kept for a subject (it gets its full allowance back).")
        @OptionGroup var options: CommonOptions
        @Argument(help: "Kind: number, ip, project, country, prefix, checks, provider, spacing.") var kind: String
        @Argument(help: "Subject.") var subject: String
        @Option(help: "Only this project.") var project: String?

        func run() async throws {
            guard LimitKind(rawValue: kind) != nil else { throw ValidationError("unknown kind '\(kind)'") }
            let (_, store) = try await adminStore(options)
            let removed = try await store.resetRates(kind: kind, subject: subject, project: project)
            print("reset \(removed) limit key(s) for \(kind) \(subject)")
        }
    }

    struct Blocks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Number prefixes blocked by pumping detection.", subcommands: [List.self, Lift.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List active prefix blocks.")
            @OptionGroup var options: CommonOptions
            @OptionGroup var listing: ListingOptions

            func run() async throws {
                let (_, store) = try await adminStore(options)
                let blocks = try await store.prefixBlocks(now: Date())
                var rows = Listing("project", "prefix", "until", "reason")
                for block in blocks {
                    let until = Timestamp.format(block.until)
                    rows.add(
                        .text(block.projectID), .text(block.prefix), .text(until), .text(block.reason),
                        text: "\(block.projectID)\t\(block.prefix)\tuntil \(until)\t\(block.reason)")
                }
                try rows.write(listing, key: "blocks")
                if listing.json == false { print("\(blocks.count) active prefix block(s)") }
            }
        }

        struct Lift: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Lift a prefix block (and restart its velocity count).")
            @OptionGroup var options: CommonOptions
            @Argument(help: "The blocked prefix, e.g. +4479.") var prefix: String
            @Option(help: "Project of the block.") var project: String

            func run() async throws {
                let (_, store) = try await adminStore(options)
                guard try await store.liftPrefixBlock(projectID: project, prefix: prefix) else {
                    throw ValidationError("no block for \(prefix) in project \(project)")
                }
                print("lifted the block on \(prefix) in \(project)")
            }
        }
    }
}
