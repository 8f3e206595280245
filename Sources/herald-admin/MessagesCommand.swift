import ArgumentParser
import Foundation
import HeraldAMQP
import HeraldCore
import HeraldRuntime
import HeraldStore

extension HeraldAdminCommand {
    struct Messages: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What happened to a message: its status, attempts, provider and every transition (destinations masked).",
            subcommands: [Show.self, List.self, Resolve.self])
    }
}

extension HeraldAdminCommand.Messages {
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one message and its transitions. Exits 4 when the ledger has no such job.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The job id.") var id: String
        @Flag(help: "Print the message object the admin API answers.") var json = false

        func run() async throws {
            guard let jobID = UUID(parsing: id) else { throw ValidationError("not a job id: \(id)") }
            let (_, store) = try await adminStore(options)
            let found = try await store.message(id: jobID)
            await store.close()
            guard let message = found else {
                print("no message \(id.lowercased()) in the ledger (never issued, or purged after ledger.retention)")
                throw ExitCode(4)
            }
            if json {
                Swift.print(String(decoding: MessageView.json(message), as: UTF8.self))
                return
            }
            let lines: [(String, String?)] = [
                ("id", message.id.lowercasedText), ("project", message.project), ("type", message.type.rawValue),
                ("to", message.maskedDestination), ("status", message.publicStatus.rawValue), ("attempts", String(message.attempts)),
                ("template", message.template), ("locale", message.locale), ("provider", message.provider),
                ("provider id", message.providerMessageID), ("producer", message.producer),
                ("segments", message.segments.map { "\($0) (\(message.encoding ?? "?"))" }), ("last error", message.lastError),
                ("created at", MessageView.timestamp(message.createdAt)), ("updated at", MessageView.timestamp(message.updatedAt)),
            ]
            for (label, value) in lines { print(label.padding(toLength: 12, withPad: " ", startingAt: 0) + (value ?? "-")) }
            print("events")
            for event in message.events {
                print(
                    "  \(MessageView.timestamp(event.at))  \(event.status.rawValue.padding(toLength: 17, withPad: " ", startingAt: 0))\(event.detail ?? "")"
                )
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List messages, newest first: one line each (created, id, type, to, status, attempts, provider, last error).")
        @OptionGroup var options: CommonOptions
        @Option(help: "The full destination: an E.164 number or an email address.") var to: String?
        @Option(help: "Statuses, comma-separated (\(MessageStatus.allCases.map(\.rawValue).joined(separator: ", "))).") var status: String?
        @Option(help: "sms, email, push or apple.") var type: String?
        @Option(help: "A project id.") var project: String?
        @Option(help: "Created since: an RFC 3339 instant or a duration back from now (1h, 30m, 7d).") var since: String?
        @Option(help: "Messages per page (1–500).") var pageSize = 50
        @Option(help: "Continue after an earlier page (the token it printed last).") var pageToken: String?
        @OptionGroup var listing: ListingOptions

        func run() async throws {
            let query: MessageQuery
            do {
                query = try MessageQuery.parse(
                    to: to, status: status, type: type, project: project, since: since, pageSize: String(pageSize), pageToken: pageToken, now: Date())
            } catch let error as HeraldError {
                throw ValidationError(error.message.replacingOccurrences(of: "INVALID_ARGUMENT : ", with: ""))
            }
            let (_, store) = try await adminStore(options)
            let page = try await store.messages(query)
            await store.close()
            if listing.json {
                // The page the admin API answers, field for field.
                Swift.print(String(decoding: MessageView.json(page), as: UTF8.self))
                return
            }
            var rows = Listing("created", "id", "type", "to", "status", "attempts", "provider", "lastError")
            for message in page.messages {
                rows.add(
                    .text(MessageView.timestamp(message.createdAt)), .text(message.id.lowercasedText), .text(message.type.rawValue),
                    .text(message.maskedDestination), .text(message.publicStatus.rawValue), .number(message.attempts),
                    .text(message.provider ?? "-"), .text(message.lastError ?? "-"))
            }
            try rows.write(listing, key: "messages")
            if let next = page.next { print("more: --page-token \(next.token)") }
        }
    }

    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decide a message in doubt (status uncertain): --sent when the provider confirms it went out, --resend to send it again.",
            discussion: """
                An uncertain message is one whose request may have reached the provider (the worker stopped or timed out after \
                it left); Herald never resends it by itself. --resend sends it again once, while its code is still valid, and \
                records the decision. Exit status 4: no such message; 5: not uncertain (already resolved, or never in doubt); \
                6: its code has expired (nothing is sent).
                """)
        @OptionGroup var options: CommonOptions
        @Argument(help: "The job id.") var id: String
        @Flag(help: "The provider confirms the message went out.") var sent = false
        @Flag(help: "Send it again, once.") var resend = false

        func validate() throws {
            guard sent != resend else { throw ValidationError("say either --sent or --resend") }
        }

        func run() async throws {
            guard let jobID = UUID(parsing: id) else { throw ValidationError("not a job id: \(id)") }
            let (configuration, store) = try await adminStore(options)
            defer { Task { await store.close() } }
            guard let message = try await store.message(id: jobID) else {
                print("no message \(id.lowercased()) in the ledger")
                throw ExitCode(4)
            }
            guard message.status == .uncertain else {
                print("message \(id.lowercased()) is \(message.publicStatus.rawValue), not uncertain: nothing to resolve")
                throw ExitCode(5)
            }
            let decidedBy = "herald-admin (\(ProcessInfo.processInfo.environment["USER"] ?? "unknown user"))"
            if sent {
                guard try await store.resolveUncertain(jobID: jobID, resolution: .sent, decidedBy: decidedBy, now: Date()) else {
                    print("message \(id.lowercased()) was resolved meanwhile")
                    throw ExitCode(5)
                }
                print("resolved \(id.lowercased()) as sent")
                return
            }
            guard let body = try await store.uncertainJob(jobID: jobID), let job = try? JobCodec.decode(body) else {
                print("message \(id.lowercased()) has no job kept to resend (recorded by an older worker); resolve it with --sent or leave it")
                throw ExitCode(5)
            }
            // A code that expires before the SMS could arrive only confuses the user.
            guard job.expiresAt > Date().addingTimeInterval(30) else {
                print("the code of \(id.lowercased()) expired at \(Timestamp.format(job.expiresAt)): nothing sent; the user asks for a new one")
                throw ExitCode(6)
            }
            // Back to queued first (once: a second resolve finds it no longer uncertain), then published.
            guard try await store.resolveUncertain(jobID: jobID, resolution: .resend, decidedBy: decidedBy, now: Date()) else {
                print("message \(id.lowercased()) was resolved meanwhile")
                throw ExitCode(5)
            }
            let (_, topology, connection) = try await adminConnection(options)
            let publisher = AMQPJobPublisher(
                connection: connection, topology: topology, keys: HeraldKeys(master: try KeyMaterial.sealingKey(configuration)))
            do {
                try await publisher.publish(job, traceparent: .random())
            } catch {
                await connection.shutdown()
                // Not queued after all: the message is in doubt again, with its job, for another try.
                try? await store.keepUncertainJob(jobID: jobID, body: body)
                try? await store.recordDelivery(
                    jobID: jobID, status: .uncertain, reason: "resend not confirmed by the broker", segments: nil, providerMessageID: nil,
                    detail: "resend by \(decidedBy) not confirmed by the broker: \(error)", now: Date())
                throw error
            }
            await connection.shutdown()
            print("resent \(id.lowercased()) (to \(message.maskedDestination)); the worker sends it once more")
        }
    }
}
