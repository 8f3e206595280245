import Foundation
import HeraldCore
import HeraldTesting

extension Bench {
    /// Password sign-ins: (w) signInWithPassword per second with herald-api held to one core, and the
    /// CPU each costs (nearly all of it the PBKDF2 hash); then (w) sendVerificationCode's answer times at
    /// a fixed rate: alone, beside busy loops at nice 19 in another process, and beside a burst of
    /// password sign-ins 32 at a time. The hashes run on their own threads (at most one per core, at
    /// nice 19), never on the cooperative pool, so a send never waits for a hash; the busy loops show
    /// what cores busy at that priority cost a send on the machine at hand, the floor the burst is
    /// compared with.
    func passwordSignIns() async throws {
        let limits =
            #"{perNumber: [], perIP: [], perProject: [], checksPerNumber: [], passwordSignInsPerAccount: [], passwordSignInsPerIP: [], signUpsPerIP: [], pumping: {enabled: false}}"#
        let stack = try await BenchStack.start(limits: limits) { $0.password = "{enabled: true}" }
        do {
            let accounts = 32
            for index in 0..<accounts {
                let created = try await stack.client.post(
                    "/v1/accounts:signUp", apiKey: TestConfiguration.apiKey,
                    json: ["email": "bench\(index)@example.com", "password": "bench-password-\(index)"])
                guard created.status == 200 else { throw TestFailure("signUp: \(created.errorMessage ?? "")") }
            }
            @Sendable func signIn(_ index: Int) async throws -> Bool {
                try await stack.client.post(
                    "/v1/accounts:signInWithPassword", apiKey: TestConfiguration.apiKey,
                    json: ["email": "bench\(index % accounts)@example.com", "password": "bench-password-\(index % accounts)"]
                ).status == 200
            }

            // One core: taskset the API process (and every thread it starts after) to CPU 0.
            let pid = stack.apis[0].pid
            let pinned = Self.pin(pid, to: "0")
            let cpuBefore = cpuSeconds(pid)
            let (ok, failed, seconds) = try await closedLoop { worker, index in try await signIn(worker * 1000 + index) }
            let cpu = cpuSeconds(pid) - cpuBefore
            print(
                String(
                    format: "(w) signInWithPassword, herald-api %@: %d in %.1f s = %.1f sign-ins/s (%d refused); CPU %.1f ms per sign-in",
                    pinned ? "on one core" : "(taskset failed: both cores)", ok, seconds, Double(ok) / seconds, failed,
                    cpu / Double(max(ok, 1)) * 1000))
            _ = Self.pin(pid, to: "0-\(ProcessInfo.processInfo.activeProcessorCount - 1)")

            // Sends alone; beside busy loops at the hash threads' priority in another process (what
            // busy cores alone cost a send on this machine); then beside a burst of sign-ins.
            let quiet = try await sendAnswerTimes(stack, offset: 0)
            let loops = try Self.busyLoops(ProcessInfo.processInfo.activeProcessorCount)
            let busy: (p50: Double, p99: Double)
            do {
                busy = try await sendAnswerTimes(stack, offset: 500_000)
                Self.stop(loops)
            } catch {
                Self.stop(loops)
                throw error
            }
            let burst = Locked(true)
            let burstCount = Locked(0)
            let (loud, _) = try await withThrowingTaskGroup(of: Void.self, returning: ((p50: Double, p99: Double), Void).self) { group in
                for worker in 0..<32 {
                    group.addTask {
                        var index = 0
                        while burst.withLock({ $0 }) {
                            if try await signIn(worker * 1000 + index) { burstCount.withLock { $0 += 1 } }
                            index += 1
                        }
                    }
                }
                let times = try await sendAnswerTimes(stack, offset: 1_000_000)
                burst.withLock { $0 = false }
                try await group.waitForAll()
                return (times, ())
            }
            print(String(format: "(w) sendVerificationCode answer alone: p50 %.1f ms, p99 %.1f ms", quiet.p50, quiet.p99))
            print(
                String(
                    format: "(w) sendVerificationCode answer beside %d busy loops at nice 19 in another process: p50 %.1f ms, p99 %.1f ms",
                    loops.count, busy.p50, busy.p99))
            print(
                String(
                    format: "(w) sendVerificationCode answer beside 32 password sign-ins in flight (%d signed in): p50 %.1f ms, p99 %.1f ms",
                    burstCount.withLock { $0 }, loud.p50, loud.p99))
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// sendVerificationCode at 50/s for `latencySeconds`: the API's answer times (ms).
    private func sendAnswerTimes(_ stack: BenchStack, offset: Int) async throws -> (p50: Double, p99: Double) {
        let times = Locked([Double]())
        let total = 50 * latencySeconds
        let interval = Duration.seconds(1) / 50
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                try? await Task.sleep(until: start + interval * index)
                group.addTask {
                    let sent = ContinuousClock.now
                    let answer = try? await stack.client.post(
                        "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey,
                        json: ["phoneNumber": BenchStack.phone(offset + index)])
                    if answer?.status == 200 { times.withLock { $0.append((ContinuousClock.now - sent).seconds * 1000) } }
                }
            }
        }
        let all = times.withLock { $0 }
        return (Self.percentile(all, 0.5), Self.percentile(all, 0.99))
    }

    /// `count` shell loops that spin at nice 19 until `stop`ped.
    static func busyLoops(_ count: Int) throws -> [Process] {
        try (0..<count).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/nice")
            process.arguments = ["-n", "19", "/bin/sh", "-c", "while :; do :; done"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
    }

    /// SIGKILL: a child inherits this process's blocked signals, SIGTERM among them.
    static func stop(_ processes: [Process]) {
        for process in processes {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// `taskset -a -p -c <cpus> <pid>`: every thread of the process; false when taskset is missing or refused.
    static func pin(_ pid: Int32, to cpus: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        process.arguments = ["-a", "-p", "-c", cpus, String(pid)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
