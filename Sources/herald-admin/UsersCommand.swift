import ArgumentParser
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldStore

extension HeraldAdminCommand {
    struct Users: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "User accounts: importing the users of a Firebase project.", subcommands: [Import.self])
    }
}

extension HeraldAdminCommand.Users {
    /// `herald-admin users import`: the JSON file `firebase auth:export --format=json` writes, with the
    /// hash parameters of the Firebase console (Authentication → Users → ⋮ → Password hash parameters)
    /// under the same names `firebase auth:import` takes. Straight into the store, in batches of 1,000;
    /// prints one line per refused user and a summary, and exits 1 when any was refused.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import users from a `firebase auth:export` JSON file, keeping their password hashes.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The export file (JSON: {\"users\": [...]}).") var file: String
        @Option(help: "The project (projects[].id) the users join.") var project: String
        @Option(name: .customLong("hash-algo"), help: "SCRYPT (Firebase's), STANDARD_SCRYPT, PBKDF2_SHA256, HMAC_SHA256, BCRYPT, …")
        var hashAlgorithm: String?
        @Option(name: .customLong("hash-key"), help: "base64_signer_key (SCRYPT) or the HMAC key, base64.") var hashKey: String?
        @Option(name: .customLong("salt-separator"), help: "base64_salt_separator (SCRYPT), base64.") var saltSeparator: String?
        @Option(help: "rounds (SCRYPT, PBKDF2).") var rounds: Int?
        @Option(name: .customLong("mem-cost"), help: "mem_cost (SCRYPT).") var memoryCost: Int?
        @Option(name: .customLong("cpu-mem-cost"), help: "N (STANDARD_SCRYPT).") var cpuMemoryCost: Int?
        @Option(name: .customLong("block-size"), help: "r (STANDARD_SCRYPT).") var blockSize: Int?
        @Option(help: "p (STANDARD_SCRYPT).") var parallelization: Int?
        @Option(name: .customLong("hash-input-order"), help: "SALT_FIRST or PASSWORD_FIRST (HMAC).") var inputOrder: String?

        func run() async throws {
            guard let data = FileManager.default.contents(atPath: file),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let users = object["users"] as? [Any]
            else { throw ValidationError("\(file) is not a `firebase auth:export` JSON file ({\"users\": [...]})") }
            let fields: [String: String] = [
                "signerKey": hashKey, "saltSeparator": saltSeparator, "rounds": rounds.map(String.init), "memoryCost": memoryCost.map(String.init),
                "cpuMemCost": cpuMemoryCost.map(String.init), "blockSize": blockSize.map(String.init),
                "parallelization": parallelization.map(String.init),
                "passwordHashOrder": inputOrder.map { $0 == "SALT_FIRST" ? "SALT_AND_PASSWORD" : "PASSWORD_AND_SALT" },
            ].compactMapValues { $0 }
            let hash: PasswordImport?
            do {
                hash = try hashAlgorithm.map { name throws(ImportProblem) in try PasswordImport(hashAlgorithm: name, value: { fields[$0] }) }
            } catch {
                throw ValidationError(error.message)
            }
            let (configuration, store) = try await adminStore(options)
            guard configuration.project(id: project) != nil else {
                await store.close()
                throw ValidationError("no project '\(project)' in projects[]")
            }
            var refused = 0
            do {
                for start in stride(from: 0, to: users.count, by: UserImport.maximumUsers) {
                    let batch = Array(users[start..<min(start + UserImport.maximumUsers, users.count)])
                    for problem in try await UserImport.run(batch, projectID: project, hash: hash, store: store, now: Date()) {
                        let uid = ((batch[problem.index] as? [String: Any])?["localId"] as? String).map { LogText.escaped($0) } ?? "?"
                        print("user \(start + problem.index) (\(uid)): \(problem.message)")
                        refused += 1
                    }
                }
            } catch {
                await store.close()
                throw error
            }
            await store.close()
            print("imported \(users.count - refused) of \(users.count) users into \(project)")
            if refused > 0 { throw ExitCode(1) }
        }
    }
}
