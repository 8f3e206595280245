import ArgumentParser
import Foundation
import HeraldChannels
import HeraldCore
import HeraldRuntime
import HeraldStore

extension HeraldAdminCommand {
    struct Providers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "SMS providers' circuit breakers, shared by every sms worker: their state, and holding one open or closed by hand.",
            subcommands: [Status.self, Open.self, Close.self, Reset.self])
    }
}

extension HeraldAdminCommand.Providers {
    /// The configured provider `name`, or a usage error listing the names.
    static func provider(_ name: String, in configuration: HeraldConfiguration) throws -> SMSProviderSettings {
        guard let provider = configuration.sms.provider(named: name) else {
            let names = configuration.sms.providers.map(\.name).joined(separator: ", ")
            throw ValidationError("no provider named '\(name)' in sms.providers (there are: \(names))")
        }
        return provider
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "One line per provider: name, type, breaker state, since when, calls and failures in the window, failures in a row, last change.")
        @OptionGroup var options: CommonOptions
        @OptionGroup var listing: ListingOptions

        func run() async throws {
            let (configuration, store) = try await adminStore(options)
            let stored = try await store.breakers()
            await store.close()
            let now = Date()
            var table = Listing("provider", "type", "state", "since", "calls", "failures", "inARow", "updated")
            for provider in configuration.sms.providers {
                let breaker = stored[provider.name].map { CircuitBreaker(settings: provider.breaker, snapshot: $0.snapshot) }
                let state = breaker?.state ?? .closed
                let (calls, failures) = breaker?.windowCounts(now: now) ?? (0, 0)
                table.add(
                    .text(provider.name), .text(provider.kind.rawValue), .text(state.label), .text(state.since.map(MessageView.timestamp) ?? "-"),
                    .number(Int(calls.rounded())), .number(Int(failures.rounded())), .number(breaker?.consecutiveFailures ?? 0),
                    .text(stored[provider.name].map { MessageView.timestamp($0.updatedAt) } ?? "-"))
            }
            try table.write(listing, key: "providers")
        }
    }

    struct Open: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drain a provider: every sms worker stops sending to it within a second, until `close` or `reset`.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The provider's name in sms.providers.") var name: String

        func run() async throws { try await override(.open, name, options) }
    }

    struct Close: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hold a provider closed: every sms worker sends to it whatever its failures, until `open` or `reset`.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The provider's name in sms.providers.") var name: String

        func run() async throws { try await override(.close, name, options) }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hand a provider back to its counts: closed, its window emptied, opening again on failures.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The provider's name in sms.providers.") var name: String

        func run() async throws { try await override(.clear, name, options) }
    }

    static func override(_ override: CircuitBreaker.Override, _ name: String, _ options: CommonOptions) async throws {
        let (configuration, store) = try await adminStore(options)
        let now = Date()
        let result: (SMSProviderSettings, CircuitBreaker)
        do {
            let provider = try provider(name, in: configuration)
            result = (
                provider,
                try await store.updateBreaker(provider: provider.name, settings: provider.breaker, now: now) {
                    $0.override(override, now: now)
                }.breaker
            )
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        let (provider, breaker) = result
        print("\(provider.name): \(breaker.state.label) (every sms worker follows within a second)")
    }
}
