import Crypto
import Foundation
import HeraldChannels
import HeraldCore
import HeraldTesting

extension Bench {
    /// Silent pushes through the APNs channel to the fake APNs (TLS, HTTP/2, JWT checked per push):
    /// one push at a time, then many streams multiplexed on the pool's connections.
    func pushThroughput() async throws {
        let key = P256.Signing.PrivateKey()
        let apns = try await FakeAPNs.start(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", key: key.publicKey, topics: ["com.example.bench"])
        let channel = APNsChannel(
            settings: .init(url: apns.url, caFile: apns.caFile, timeout: .seconds(10)),
            token: try APNsProviderToken(keyPEM: key.pemRepresentation, keyID: "BENCHKEY01", teamID: "BENCHTEAM1"), logger: quietLogger())
        let message = PushMessage(
            deviceToken: String(repeating: "ab", count: 32), environment: .sandbox, topic: "com.example.bench",
            payload: ["receipt": SecureRandom.base64URL(bytes: 32)])
        func send() async -> Bool {
            let result = await channel.send(message, secret: "bench-secret", jobID: UUID(), expiresAt: Date().addingTimeInterval(300), now: Date())
            if case .sent = result.outcome { return true }
            return false
        }
        _ = await send()  // TLS handshake and first token outside the measurement
        var seenBefore = apns.received.count
        for concurrency in [1] + pushStreams {
            let perTask = max(1, (concurrency == 1 ? pushCount / 5 : pushCount) / concurrency)
            let total = perTask * concurrency
            let started = ContinuousClock.now
            let sent = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        var sent = 0
                        for _ in 0..<perTask where await send() { sent += 1 }
                        return sent
                    }
                }
                return await group.reduce(0, +)
            }
            let seconds = (ContinuousClock.now - started).seconds
            // A push APNs saw more than once: libcurl re-sends a connection's unanswered streams when
            // that connection fails, even if the server had already taken them. Here the fake's SwiftNIO
            // closes each connection after 200 client resets in 30 s, and Debian 12's libcurl resets every
            // stream it finished (docs/sign-in.md, "Known limit" under app verification).
            let arrived = apns.received.dropFirst(seenBefore)
            let twice = arrived.count - Set(arrived.compactMap { $0.headers["apns-id"] }).count
            seenBefore = apns.received.count
            print(
                String(
                    format: "(p) APNs channel, %d stream(s) in flight: %d pushes in %.2f s = %.0f pushes/s (%d accepted, %d arrived twice)",
                    concurrency, total, seconds, Double(total) / seconds, sent, twice))
        }
        let minted = Set(apns.received.compactMap(\.providerToken)).count
        print("(p) provider tokens minted for \(apns.received.count) pushes: \(minted)")
        channel.shutdown()
        await apns.stop()
    }
}
