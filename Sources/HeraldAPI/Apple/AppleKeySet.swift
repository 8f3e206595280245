import Foundation
import HeraldCore
import HeraldCurl
import JWTKit
import Logging

/// Apple's identity-token signing keys, fetched from a project's `apple.jwksUrl` and cached: when to
/// fetch is `KeySetRefreshPolicy`'s decision; this actor does the fetching (one at a time; callers
/// arriving meanwhile wait for the same fetch) and rebuilds the key collection on each success.
///
/// The collection is rebuilt from scratch each time, and a token's `kid` is looked up here before
/// jwt-kit sees it: jwt-kit would otherwise verify a token with an unknown kid against its default key.
actor AppleKeySet {
    let url: String
    let caFile: String?
    let client: CurlClient
    let clock: any WallClock
    let logger: Logger
    private var policy = KeySetRefreshPolicy()
    private var keys: JWTKeyCollection?
    private var kids: Set<String> = []
    private var fetching: Task<Void, Never>?

    init(url: String, caFile: String?, client: CurlClient, clock: any WallClock, logger: Logger) {
        self.url = url
        self.caFile = caFile
        self.client = client
        self.clock = clock
        self.logger = logger
    }

    /// The collection holding key `kid`; INVALID_IDP_RESPONSE when Apple does not publish it, UNAVAILABLE
    /// (with Retry-After) when the keys cannot be fetched and none are cached.
    func collection(for kid: String) async throws(HeraldError) -> JWTKeyCollection {
        switch policy.decide(keyKnown: kids.contains(kid), now: clock.now) {
        case .use:
            break
        case .fetch:
            await fetchOnce()
        case .unknownKey:
            throw HeraldError(.invalidIdPResponse, "The id_token is signed with a key Apple does not publish.")
        case .unavailable(let retryAfter):
            throw Self.unavailable(retryAfter: retryAfter)
        }
        guard let keys else { throw Self.unavailable(retryAfter: policy.failurePause) }
        guard kids.contains(kid) else { throw HeraldError(.invalidIdPResponse, "The id_token is signed with a key Apple does not publish.") }
        return keys
    }

    static func unavailable(retryAfter: TimeInterval) -> HeraldError {
        HeraldError(
            .unavailable, "Apple's signing keys cannot be fetched right now. Try again later.",
            retryAfter: .seconds(max(1, Int(retryAfter.rounded(.up)))))
    }

    private func fetchOnce() async {
        if let fetching { return await fetching.value }
        let task = Task { await self.fetch() }
        fetching = task
        await task.value
        fetching = nil
    }

    private func fetch() async {
        policy.fetchStarted(at: clock.now)
        do {
            let response = try await client.perform(
                CurlHTTPRequest(method: "GET", url: url, timeout: .seconds(5), connectTimeout: .seconds(3), caFile: caFile))
            guard response.status == 200 else { throw FetchFailure(description: "HTTP \(response.status)") }
            let jwks = try JSONDecoder().decode(JWKS.self, from: response.body)
            let collection = JWTKeyCollection()
            var found: Set<String> = []
            for jwk in jwks.keys where jwk.keyType == .rsa {
                guard let kid = jwk.keyIdentifier?.string, jwk.algorithm == nil || jwk.algorithm == .rs256 else { continue }
                try await collection.add(jwk: jwk)
                found.insert(kid)
            }
            guard found.isEmpty == false else { throw FetchFailure(description: "no RS256 keys in the set") }
            keys = collection
            kids = found
            policy.fetchFinished(succeeded: true, at: clock.now)
            logger.info("Apple signing keys fetched", metadata: ["url": .string(url), "kids": .string(found.sorted().joined(separator: ","))])
        } catch {
            policy.fetchFinished(succeeded: false, at: clock.now)
            logger.error(
                "cannot fetch Apple's signing keys",
                metadata: [
                    "url": .string(url), "error": .string((error as? CurlError)?.message ?? "\(error)"), "cached": .stringConvertible(keys != nil),
                ])
        }
    }

    struct FetchFailure: Error, CustomStringConvertible {
        var description: String
    }
}
