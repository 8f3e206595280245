import Foundation
import HeraldTesting

/// A request cheaper than a send that does a prefix of a send's work, so the differences between rungs
/// are what each part of a send costs. The performance suite loads them with wrk for herald-api's CPU
/// per request (`sendRungs`, with `/healthz` as `healthzFloor`), the instructions suite counts them
/// under callgrind (`instructionCounts`): one definition, so both ladders climb the same rungs.
struct SendRung: Sendable {
    let label: String
    /// What this rung adds to the one below it.
    let adds: String
    /// sendVerificationCode's JSON body; nil for `GET /healthz`.
    let body: String?
    /// The status every answer of this rung has: any other means it did other work.
    let status: Int

    static let healthz = SendRung(label: "/healthz", adds: "HTTP alone: read, parse, route, answer", body: nil, status: 200)
    /// No store, no broker: refused once the number is parsed.
    static let refused = SendRung(
        label: "refused at its number", adds: "a longer request head, the body read and parsed, the project, an error envelope",
        body: #"{"phoneNumber":"+1"}"#, status: 400)

    /// No limits, no ledger row, no job, no code sealed: the session of the project's fixed code. (A
    /// configuration without a test number would send an empty one, refused: the status check stops it.)
    static let testNumber = SendRung(
        label: "to the test number", adds: "the app check, the second-factor read, the session stored, a log line",
        body: #"{"phoneNumber":"\#(TestConfiguration().testNumbers.keys.first ?? "")"}"#, status: 200)

    /// Every rung from the bottom up.
    static let all = [healthz, refused, testNumber]

    func request(_ client: HeraldClient) async throws -> HeraldClient.Answer {
        guard let body else { return try await client.get("/healthz") }
        return try await client.send(
            "POST", "/v1/accounts:sendVerificationCode", apiKey: TestConfiguration.apiKey, body: Data(body.utf8),
            contentType: "application/json")
    }
}
