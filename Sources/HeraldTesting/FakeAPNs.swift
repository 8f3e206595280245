import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import Synchronization

/// A fake APNs on 127.0.0.1: HTTP/2 over TLS with the test CA (`TestTLS`), checking each push the way
/// Apple does (provider JWT signed by the test key, headers, payload) and answering from a script.
///
/// Every check that fails is recorded in `Received.problems` and answered with Apple's status and
/// reason for it, so a test can both see the violation and exercise Herald's handling of the answer.
public final class FakeAPNs: Sendable {
    /// One push as received.
    public struct Received: Sendable {
        public var arrivedAt: Date
        public var path: String
        public var deviceToken: String
        /// Header names lower-cased.
        public var headers: [String: String]
        public var body: Data
        /// The provider token as sent (to see reuse and renewal).
        public var providerToken: String?
        /// `iat` of the provider token.
        public var issuedAt: Int?
        public var receipt: String?
        public var secret: String?
        /// Apple reasons for every failed check; empty when the push is well-formed.
        public var problems: [String]
    }

    /// An answer to give to a well-formed push.
    public struct Reply: Sendable {
        public var status: Int
        public var reason: String?
        /// Milliseconds since 1970, sent with 410 Unregistered.
        public var timestamp: Int?
        public var headers: [String: String]

        public init(status: Int, reason: String? = nil, timestamp: Int? = nil, headers: [String: String] = [:]) {
            self.status = status
            self.reason = reason
            self.timestamp = timestamp
            self.headers = headers
        }

        public static let ok = Reply(status: 200)
    }

    struct State {
        var received: [Received] = []
        var script: [Reply] = []
    }

    final class StateBox: Sendable {
        let state = Mutex(State())
    }

    let stateBox: StateBox
    let server: BackgroundServer

    /// `https://127.0.0.1:<port>` (for `push.apns.url`).
    public var url: String { "https://127.0.0.1:\(server.port)" }
    /// The CA that signed the server certificate (for `push.apns.caFile`).
    public var caFile: String { TestTLS.shared.caFile }

    /// Starts a server that accepts provider tokens signed by `key` for `keyID`/`teamID` and pushes for
    /// `topics`; well-formed pushes get 200 unless scripted otherwise.
    public static func start(keyID: String, teamID: String, key: P256.Signing.PublicKey, topics: Set<String>) async throws -> FakeAPNs {
        let box = StateBox()
        let router = Router()
        router.post("/3/device/:token") { request, context -> Response in
            let body = Data(try await request.body.collect(upTo: 1 << 16).readableBytesView)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            var received = Received(
                arrivedAt: Date(), path: request.uri.path, deviceToken: context.parameters.get("token") ?? "", headers: headers, body: body,
                providerToken: nil, issuedAt: nil, receipt: nil, secret: nil, problems: [])
            let check = Check(keyID: keyID, teamID: teamID, key: key, topics: topics)
            let refusal = check.inspect(&received)
            let reply = box.state.withLock { state -> Reply in
                state.received.append(received)
                if let refusal { return refusal }
                return state.script.isEmpty ? .ok : state.script.removeFirst()
            }
            var fields = HTTPFields()
            fields[HTTPField.Name("apns-id")!] = headers["apns-id"] ?? UUID().uuidString.lowercased()
            for (name, value) in reply.headers {
                if let field = HTTPField.Name(name) { fields[field] = value }
            }
            guard reply.status != 200 else { return Response(status: .ok, headers: fields) }
            fields[.contentType] = "application/json"
            var answer: [String: Any] = ["reason": reply.reason ?? "InternalServerError"]
            if let timestamp = reply.timestamp { answer["timestamp"] = timestamp }
            let json = try JSONSerialization.data(withJSONObject: answer)
            return Response(status: .init(code: reply.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: json)))
        }
        // Like Apple, close idle connections; and do not wait long for clients after GOAWAY on stop.
        let server = try await BackgroundServer.start(
            router: router,
            server: .http2Upgrade(
                tlsConfiguration: TestTLS.shared.serverConfiguration(),
                configuration: .init(idleTimeout: .seconds(30), gracefulCloseTimeout: .seconds(1))))
        return FakeAPNs(stateBox: box, server: server)
    }

    init(stateBox: StateBox, server: BackgroundServer) {
        self.stateBox = stateBox
        self.server = server
    }

    /// Everything received so far, in arrival order.
    public var received: [Received] { stateBox.state.withLock { $0.received } }

    /// Replies for the next well-formed pushes, in order; afterwards 200.
    public func script(_ replies: [Reply]) { stateBox.state.withLock { $0.script.append(contentsOf: replies) } }

    public func stop() async { await server.stop() }

    /// Apple's checks, in the order APNs reports them.
    struct Check {
        let keyID: String
        let teamID: String
        let key: P256.Signing.PublicKey
        let topics: Set<String>

        /// Fills in what the push carries and returns the refusal for the first problem, if any.
        func inspect(_ push: inout Received) -> Reply? {
            var refusals: [Reply] = []
            func problem(_ status: Int, _ reason: String) {
                push.problems.append(reason)
                refusals.append(Reply(status: status, reason: reason))
            }
            let headers = push.headers
            // Provider token: "bearer <ES256 JWT>" with kid, iss and a numeric iat, signed raw r‖s.
            if let authorization = headers["authorization"], authorization.hasPrefix("bearer ") {
                let token = String(authorization.dropFirst("bearer ".count))
                push.providerToken = token
                let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                let header = parts.count == 3 ? Self.json(parts[0]) : nil
                let claims = parts.count == 3 ? Self.json(parts[1]) : nil
                push.issuedAt = claims?["iat"] as? Int
                let signature = parts.count == 3 ? Data(base64URLEncoded: parts[2]) : nil
                let signed = signature.flatMap { try? P256.Signing.ECDSASignature(rawRepresentation: $0) }.map {
                    key.isValidSignature($0, for: Data((parts[0] + "." + parts[1]).utf8))
                }
                if header?["alg"] as? String != "ES256" || signed != true || claims?["iss"] as? String != teamID
                    || push.issuedAt == nil
                {
                    problem(403, "InvalidProviderToken")
                } else if header?["kid"] as? String != keyID {
                    problem(403, "InvalidProviderToken")
                } else if let issuedAt = push.issuedAt, Date().timeIntervalSince1970 - Double(issuedAt) > 3600 {
                    problem(403, "ExpiredProviderToken")
                }
            } else {
                problem(403, "MissingProviderToken")
            }
            if push.deviceToken.count != 64 || push.deviceToken.allSatisfy(\.isHexDigit) == false {
                problem(400, "BadDeviceToken")
            }
            if headers["apns-push-type"] != "background" { problem(400, "InvalidPushType") }
            if headers["apns-priority"] != "5" { problem(400, "BadPriority") }
            if let topic = headers["apns-topic"] {
                if topics.contains(topic) == false { problem(400, "TopicDisallowed") }
            } else {
                problem(400, "MissingTopic")
            }
            if headers["apns-expiration"].flatMap(Int.init) == nil { problem(400, "BadExpirationDate") }
            let messageID = headers["apns-id"]
            if messageID.flatMap(UUID.init(uuidString:)) == nil || messageID != messageID?.lowercased() { problem(400, "BadMessageId") }
            if push.body.isEmpty {
                problem(400, "PayloadEmpty")
            } else if push.body.count > 4096 {
                problem(413, "PayloadTooLarge")
            } else if let payload = (try? JSONSerialization.jsonObject(with: push.body)) as? [String: Any],
                let aps = payload["aps"] as? [String: Any], let auth = payload["com.google.firebase.auth"] as? [String: Any]
            {
                push.receipt = auth["receipt"] as? String
                push.secret = auth["secret"] as? String
                // A background push carries content-available and nothing the user would see or hear.
                if aps.count != 1 || aps["content-available"] as? Int != 1 { problem(400, "BadPayload") }
                if push.receipt == nil || push.secret == nil { problem(400, "BadPayload") }
            } else {
                problem(400, "BadPayload")
            }
            return refusals.first
        }

        static func json(_ part: String) -> [String: Any]? {
            Data(base64URLEncoded: part).flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
        }
    }
}

extension Data {
    /// Decodes base64url without padding (JWT segments).
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
