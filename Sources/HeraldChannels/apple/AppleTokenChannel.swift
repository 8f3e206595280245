import Foundation
import HeraldCore
import HeraldCurl

/// Sign in with Apple's token endpoints over libcurl: `POST /auth/token` exchanges an authorization
/// code for a refresh token, `POST /auth/revoke` revokes it. Both take forms with `client_id` and
/// `client_secret` (`AppleClientSecret`). Every answer maps to a `DeliveryOutcome`:
///
/// - `invalid_grant` (the code expired or was used) and the other 400s are final;
/// - 429, 5xx and connection failures before the request left are retryable;
/// - a request that may have reached Apple without an answer: the exchange is *uncertain* (a used code
///   cannot be exchanged again), the revocation retryable (revoking twice is harmless: Apple answers 200
///   for tokens already revoked).
public struct AppleTokenChannel: Sendable {
    /// What one project's Apple settings say about where and how to call.
    public struct Endpoint: Sendable {
        public var tokenURL: String
        public var revokeURL: String
        public var caFile: String?
        public var timeout: Duration

        public init(tokenURL: String, revokeURL: String, caFile: String?, timeout: Duration = .seconds(10)) {
            self.tokenURL = tokenURL
            self.revokeURL = revokeURL
            self.caFile = caFile
            self.timeout = timeout
        }
    }

    /// The answer of an exchange.
    public enum Exchange: Sendable, Equatable {
        case refreshToken(String)
        case failed(DeliveryOutcome)
    }

    let client: CurlClient

    public init(client: CurlClient) {
        self.client = client
    }

    public func exchange(code: String, clientID: String, secret: String, redirectURI: String?, at endpoint: Endpoint) async -> Exchange {
        var form = [
            (name: "client_id", value: clientID), (name: "client_secret", value: secret), (name: "grant_type", value: "authorization_code"),
            (name: "code", value: code),
        ]
        if let redirectURI { form.append((name: "redirect_uri", value: redirectURI)) }
        switch await post(form, to: endpoint.tokenURL, endpoint: endpoint, step: "token") {
        case .failure(let failure):
            // An exchange that may have happened cannot be repeated: the code is single-use.
            if case .retryable(let reason, _, let code) = failure.outcome, code == "no_answer" {
                return .failed(.uncertain(reason: reason, code: code))
            }
            return .failed(failure.outcome)
        case .success(let body):
            guard let answer = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
                let refresh = answer["refresh_token"] as? String, refresh.isEmpty == false
            else {
                return .failed(.uncertain(reason: "Apple's token answer carries no refresh_token", code: "no_refresh_token"))
            }
            return .refreshToken(refresh)
        }
    }

    public func revoke(refreshToken: String, clientID: String, secret: String, at endpoint: Endpoint) async -> DeliveryOutcome {
        let form = [
            (name: "client_id", value: clientID), (name: "client_secret", value: secret), (name: "token", value: refreshToken),
            (name: "token_type_hint", value: "refresh_token"),
        ]
        switch await post(form, to: endpoint.revokeURL, endpoint: endpoint, step: "revoke") {
        case .failure(let failure): return failure.outcome
        case .success: return .sent(reference: nil)
        }
    }

    /// A form POST; `.success` with the body of a 200, else the outcome. Apple's error bodies are
    /// `{"error": "invalid_grant"}`-style codes, quoted as they are (they never carry tokens).
    func post(_ form: [(name: String, value: String)], to url: String, endpoint: Endpoint, step: String) async -> Result<Data, Failure> {
        let request = CurlHTTPRequest(
            url: url, headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
            body: Data(FormEncoding.encode(form).utf8), timeout: endpoint.timeout, caFile: endpoint.caFile)
        do {
            let response = try await client.perform(request)
            if response.status == 200 { return .success(response.body) }
            let error = ((try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any])?["error"] as? String
            let named = error.map { String($0.prefix(40).filter { $0.isLetter || $0 == "_" }) } ?? ""
            let label = named.isEmpty ? "http_\(response.status)" : named
            switch response.status {
            case 429, 500..<600:
                return .failure(
                    Failure(.retryable(reason: "Apple \(step) answered HTTP \(response.status)", retryAfter: response.retryAfter, code: label)))
            default:
                return .failure(Failure(.permanent(reason: "Apple \(step) answered HTTP \(response.status) \(label)", code: label)))
            }
        } catch {
            switch error.kind {
            case .couldNotConnect, .timedOutBeforeSending, .cancelledBeforeSending:
                return .failure(Failure(.retryable(reason: "Apple unreachable: \(error.message)", retryAfter: nil, code: "unreachable")))
            case .failedAfterSending:
                return .failure(Failure(.retryable(reason: "Apple did not answer: \(error.message)", retryAfter: nil, code: "no_answer")))
            case .configuration:
                return .failure(Failure(.permanent(reason: "request to Apple misconfigured: \(error.message)", code: "misconfigured")))
            case .other:
                return .failure(Failure(.retryable(reason: "transport error talking to Apple: \(error.message)", retryAfter: nil, code: "transport")))
            }
        }
    }

    /// A failed call's outcome (an Error so it can travel in a `Result`).
    struct Failure: Error {
        var outcome: DeliveryOutcome
        init(_ outcome: DeliveryOutcome) { self.outcome = outcome }
    }
}
