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
        subcommands: [Topology.self, DeadLetters.self, Limits.self, Store.self])

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
            commandName: "dead-letters", abstract: "Inspect and replay dead-lettered jobs.", subcommands: [List.self, Replay.self])
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
            let (_, topology, connection) = try await adminConnection(options)
            defer { Task { await connection.shutdown() } }
            do {
                try await connection.perform { try topology.declare(on: $0) }
            } catch let error as AMQPError {
                await connection.shutdown()
                throw ValidationError(
                    "\(error.detail)\nA queue exists with different arguments; delete it (after draining) or choose another amqp.exchange.")
            }
            for type in HeraldAMQP.Topology.supportedTypes {
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
            print(try topology.definitions(virtualHost: vhost ?? configuration.amqp.endpoints[0].virtualHost, user: user), terminator: "")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show each queue's ready messages and consumers.")
        @OptionGroup var options: CommonOptions

        func run() async throws {
            let (_, topology, connection) = try await adminConnection(options)
            for type in HeraldAMQP.Topology.supportedTypes {
                for queue in topology.queues(type) {
                    do {
                        let (messages, consumers) = try await connection.perform { try $0.inspectQueue(queue) }
                        print("\(queue)\tready=\(messages)\tconsumers=\(consumers)")
                    } catch {
                        print("\(queue)\tmissing (run: herald-admin topology declare)")
                    }
                }
            }
            await connection.shutdown()
        }
    }
}

extension HeraldAdminCommand.DeadLetters {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List dead-lettered jobs with their reasons (they stay in the queue).")
        @OptionGroup var options: CommonOptions
        @Option(help: "Job type.") var type: String = "sms"

        func run() async throws {
            let (_, topology, connection) = try await adminConnection(options)
            guard let jobType = JobType(rawValue: type) else { throw ValidationError("unknown job type \(type)") }
            let queue = topology.deadQueue(jobType)
            // Unacknowledged gets return to the queue when the channel closes.
            let messages = try await connection.perform { channel -> [AMQPDelivery] in
                var seen: [AMQPDelivery] = []
                while seen.count < 1000, let message = try channel.get(queue, acknowledge: false) { seen.append(message) }
                try channel.closeAndReopen()
                return seen
            }
            for message in messages {
                var reason = "-"
                if case .string(let text) = message.headers["x-herald-reason"] { reason = text }
                print("\(message.messageID ?? "-")\t\(reason)")
            }
            print("\(messages.count) dead-lettered \(type) job(s) in \(queue)")
            await connection.shutdown()
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move dead-lettered jobs back to their work queue, to be sent again (each is removed only after the broker confirmed the copy)."
        )
        @OptionGroup var options: CommonOptions
        @Option(help: "Job type.") var type: String = "sms"
        @Option(help: "At most this many jobs.") var limit: Int = 1000

        func run() async throws {
            let (configuration, topology, connection) = try await adminConnection(options)
            guard let jobType = JobType(rawValue: type) else { throw ValidationError("unknown job type \(type)") }
            let store = try await SQLStore.open(configuration.store, logger: Logger(label: "herald-admin"))
            var replayed = 0
            while replayed < limit {
                guard let message = try await connection.perform({ try $0.get(topology.deadQueue(jobType), acknowledge: false) }) else { break }
                var headers = message.headers.filter { Job.carriedHeaders.contains($0.key) }
                headers["x-herald-attempt"] = .int(0)
                // The ledger says "failed"; mark the job pending again so a worker sends it.
                if let id = message.messageID.flatMap(UUID.init(uuidString:)) {
                    try await store.recordDelivery(jobID: id, status: .pending, reason: "replayed by herald-admin", now: Date())
                }
                try await connection.publish(
                    AMQPOutgoingMessage(
                        exchange: topology.exchange, routingKey: jobType.rawValue, body: message.body, messageID: message.messageID,
                        type: message.type, contentType: message.contentType, headers: headers))
                try await connection.perform { try $0.ack(message) }
                replayed += 1
            }
            print("replayed \(replayed) \(type) job(s); jobs already past expiresAt will be dropped by the worker")
            await connection.shutdown()
        }
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
                let status = try await store.status()
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
                        print("\rcopy: \(table) \(copied)/\(total)", terminator: "")
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

        /// `herald-admin store status`: backend, schema version, rows per table; never migrates.
        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the store's backend, schema version and rows per table.")
            @OptionGroup var options: CommonOptions

            func run() async throws {
                let (configuration, store) = try await adminStore(options, migrate: false)
                let status = try await store.status()
                print("backend\t\(status.backend.rawValue)\t\(configuration.store.location.redacted)")
                let behind = status.version < status.latest ? " (behind: run herald-admin store migrate)" : ""
                print("schema\t\(status.version)\tof \(status.latest) known to this build\(behind)")
                for (table, rows) in status.rows { print("rows\t\(table)\t\(rows)") }
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

        func run() async throws {
            guard LimitKind(rawValue: kind) != nil else { throw ValidationError("unknown kind '\(kind)'") }
            let (_, store) = try await adminStore(options)
            let states = try await store.rateStates(kind: kind, subject: subject, project: project)
            let now = Date().microsecondsSince1970
            for (key, tat) in states {
                guard let parts = LimitCheck.parse(key), let policy = RatePolicy.parse(parts.policy) else { continue }
                let parameters = GCRA.Parameters(policy)
                let remaining = GCRA.remaining(tat: tat, now: now, parameters: parameters)
                let wait = remaining > 0 ? 0 : max(0, tat + parameters.interval - parameters.tolerance - now)
                print(
                    "\(parts.project)\t\(parts.policy)\tremaining=\(remaining)\tnext in \(String(format: "%.1f", Double(wait) / 1e6)) s\tfull again in \(String(format: "%.0f", Double(max(0, tat - now)) / 1e6)) s"
                )
            }
            if states.isEmpty { print("no limit state for \(kind) \(subject): it has the full allowance") }
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

            func run() async throws {
                let (_, store) = try await adminStore(options)
                let blocks = try await store.prefixBlocks(now: Date())
                for block in blocks {
                    print("\(block.projectID)\t\(block.prefix)\tuntil \(Timestamp.format(block.until))\t\(block.reason)")
                }
                print("\(blocks.count) active prefix block(s)")
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
