import Foundation
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import HeraldTesting
import HeraldWorker

extension Bench {
    /// The API side: `sendOobCode` at concurrency 64 (code stored hashed, link sealed, email job
    /// confirmed by the broker before each answer), limits off, every request a new address.
    func sendOobCodeThroughput() async throws {
        let stack = try await BenchStack.start(limits: Self.noLimits)
        do {
            let (ok, failed, seconds) = try await closedLoop { worker, index in
                try await stack.client.post(
                    "/v1/accounts:sendOobCode", apiKey: TestConfiguration.apiKey,
                    json: ["requestType": "EMAIL_SIGNIN", "email": "bench\(worker)-\(index)@example.com", "continueUrl": "https://app.example.com/"]
                ).status == 200
            }
            print(
                String(
                    format: "(e) sendOobCode at concurrency 64: %d accepted in %.1f s = %.0f req/s (%d refused)", ok, seconds, Double(ok) / seconds,
                    failed))
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }

    /// Sign-in mails: rendering (templates + MIME, no I/O), then SMTP submissions through the SMTP
    /// channel (libcurl, pooled connections) to aiosmtpd on the same machine, one at a time and several
    /// in flight. aiosmtpd parses and reports every message in Python, so the second figure is a floor
    /// for what Herald can submit, not a property of a real relay.
    func emailThroughput() async throws {
        try await sendOobCodeThroughput()
        var settings = TestConfiguration()
        settings.emailFrom = "Herald Bench <no-reply@bench.test>"
        let configuration = try settings.parsed()
        let keys = HeraldKeys(master: configuration.codes.sealingKey!)
        let sealer = Sealer(key: keys.sealing)
        func job() -> Job {
            let id = UUID()
            let link = SignInLink(
                actionURL: "https://auth.example.com/__/auth/action", apiKey: "bench-key", oobCode: OobCode.generate(),
                continueURL: "https://app.example.com/finish", languageCode: "de"
            ).text
            return Job(
                id: id, project: "bench", createdAt: Date(), expiresAt: Date().addingTimeInterval(3600), locale: "de",
                payload: .email(
                    EmailMessage(
                        to: "bench@example.com", template: .signInLink,
                        params: ["linkSealed": sealer.seal(link, jobID: id, destination: "bench@example.com"), "app": "Bench"])))
        }

        // Rendering: open the sealed link, three templates, MIME with quoted-printable and RFC 2047.
        let renderer = EmailJobHandler(
            channel: ConsoleEmailChannel(print: LineOutput.standardOutput.write), keys: keys, settings: configuration.email)
        let jobs = (0..<emailCount).map { _ in job() }
        var bytes = 0
        let started = ContinuousClock.now
        for job in jobs { bytes += (try? renderer.render(job, now: Date()).get())?.rendered.count ?? 0 }
        let seconds = (ContinuousClock.now - started).seconds
        print(
            String(
                format: "(e) render sign-in mails (de, templates + MIME): %d in %.2f s = %.0f mails/s, %d bytes each", emailCount, seconds,
                Double(emailCount) / seconds, bytes / max(1, emailCount)))

        let sink = try await SMTPSink.start()
        defer { sink.stop() }
        var smtp = configuration.email
        smtp.smtpURL = sink.url
        let client = CurlClient(logger: quietLogger(), maxConnectionsPerHost: 16)
        let channel = SMTPChannel(client: client, settings: smtp)
        let messages = jobs.prefix(emailSubmissions).compactMap { try? renderer.render($0, now: Date()).get() }
        for concurrency in [1, 8] {
            let before = sink.accepted.count
            let greetingsBefore = sink.events("ehlo").count
            let perTask = messages.count / concurrency
            let begun = ContinuousClock.now
            let sent = await withTaskGroup(of: Int.self) { group in
                for task in 0..<concurrency {
                    group.addTask {
                        var sent = 0
                        for message in messages[(task * perTask)..<((task + 1) * perTask)] {
                            if case .sent = await channel.deliver(message, envelopeFrom: "no-reply@bench.test") { sent += 1 }
                        }
                        return sent
                    }
                }
                return await group.reduce(0, +)
            }
            let elapsed = (ContinuousClock.now - begun).seconds
            _ = await eventually(timeout: .seconds(10)) { sink.accepted.count - before >= sent }
            print(
                String(
                    format:
                        "(e) SMTP submissions to aiosmtpd, %d in flight: %d in %.2f s = %.0f mails/s (%d accepted by the server, %d connection(s) opened)",
                    concurrency, perTask * concurrency, elapsed, Double(perTask * concurrency) / elapsed, sink.accepted.count - before,
                    sink.events("ehlo").count - greetingsBefore))
        }
        client.shutdown()
    }
}
