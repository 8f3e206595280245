import Foundation
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldAPI

/// `OperationRouter` takes `POST …/v1/<operation>` ahead of Hummingbird's router: it must answer exactly
/// as the router would, and leave everything else to it.
@Suite("Operation paths routed ahead of the router")
struct OperationRouterTests {
    @Test("which paths are taken (operations with a colon under the two v1 prefixes) and which go to the router")
    func paths() {
        let taken: [(String, String)] = [
            ("/v1/accounts:sendVerificationCode", "accounts:sendVerificationCode"),
            ("/identitytoolkit.googleapis.com/v1/accounts:signInWithPhoneNumber", "accounts:signInWithPhoneNumber"),
            ("/v1/:", ":"),
        ]
        for (path, operation) in taken { #expect(OperationRouter.operation(inPath: path) == Substring(operation), "\(path)") }
        let left = [
            "/v1/", "/v1", "/v1/projects", "/v1/recaptchaParams", "/v1/accounts%3AsendVerificationCode", "/v1/accounts:x/",
            "/v1//accounts:x", "/v1/projects/demo/accounts:lookup", "/v2/accounts:revokeToken", "/V1/accounts:x", "v1/accounts:x",
            "/identitytoolkit.googleapis.com/v1/", "/identitytoolkit.googleapis.com/v2/accounts:x", "/x/v1/accounts:x", "/",
            "/securetoken.googleapis.com/v1/token", "/www.googleapis.com/identitytoolkit/v3/relyingparty/sendVerificationCode",
        ]
        for path in left { #expect(OperationRouter.operation(inPath: path) == nil, "\(path)") }
    }

    /// What a client sees of an answer, without what differs between any two sends (session ids, dates).
    static func visible(_ answer: HeraldClient.Answer) -> String {
        let headers = answer.headers.filter { $0.name != "date" }.map { "\($0.name)=\($0.name == "content-length" ? "" : $0.value)" }
        return "\(answer.status) \(answer.errorMessage ?? "-") \(headers.sorted()) \(answer.json.keys.sorted())"
    }

    @Test("the same requests get the same answers with it and with the router alone: sends, errors, CORS, other routes")
    func sameAnswers() async throws {
        let key = TestConfiguration.apiKey
        let preflight = [("Origin", "https://app.example.com"), ("Access-Control-Request-Method", "POST")]
        let requests: [(method: String, path: String, apiKey: String?, body: String?, headers: [(String, String)])] = [
            ("POST", "/v1/accounts:sendVerificationCode", key, #"{"phoneNumber":"+15555550100"}"#, []),
            ("POST", "/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode", key, #"{"phoneNumber":"+15555550101"}"#, []),
            ("POST", "/v1/accounts:sendVerificationCode", key, #"{"phoneNumber":"+15555550102"}"#, [("Origin", "https://app.example.com")]),
            ("POST", "/v1/accounts:sendVerificationCode", key, #"{"phoneNumber":"+15555550103"}"#, [("Origin", "https://evil.example")]),
            ("POST", "/v1/accounts:sendVerificationCode", "wrong-key", #"{"phoneNumber":"+15555550100"}"#, []),
            ("POST", "/v1/accounts:sendVerificationCode", key, #"{"phoneNumber":"#, []),
            ("POST", "/v1/accounts:sendVerificationCode", key, #"{"phoneNumber":"12"}"#, []),
            ("POST", "/v1/accounts:signInWithPhoneNumber", key, #"{"sessionInfo":"nope","code":"123456"}"#, []),
            ("POST", "/v1/accounts:noSuchOperation", key, "{}", []),
            ("POST", "/v1/projects", key, "{}", []),
            ("POST", "/v1/recaptchaParams", key, "{}", []),
            ("GET", "/v1/accounts:sendVerificationCode", key, nil, []),
            ("OPTIONS", "/v1/accounts:sendVerificationCode", nil, nil, preflight),
        ]
        func answers(routeOperationsFirst: Bool) async throws -> [String] {
            let harness = try RouterHarness()
            let seen = Mutex<[String]>([])
            try await harness.run(routeOperationsFirst: routeOperationsFirst) { client in
                for request in requests {
                    let answer = try await client.send(
                        request.method, request.path, apiKey: request.apiKey, body: request.body.map { Data($0.utf8) },
                        contentType: request.body == nil ? nil : "application/json", headers: request.headers)
                    seen.withLock { $0.append("\(request.method) \(request.path): \(Self.visible(answer))") }
                }
            }
            return seen.withLock { $0 } + ["jobs published: \(harness.publishedJobs().count)"]
        }
        let direct = try await answers(routeOperationsFirst: true)
        let routed = try await answers(routeOperationsFirst: false)
        #expect(direct.count == requests.count + 1)
        for (one, other) in zip(direct, routed) { #expect(one == other) }
        // The list covers what it claims: accepted sends, refusals, and a CORS grant.
        #expect(direct[0].contains(" 200 ") && direct[4].contains(" 400 ") && direct[2].contains("access-control-allow-origin="))
    }
}
