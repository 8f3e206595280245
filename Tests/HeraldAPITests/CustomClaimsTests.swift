import Foundation
import HeraldTesting
import Testing

@Suite("Custom claims (admin customAttributes) over the wire")
struct CustomClaimsTests {
    @Test("admins set claims Firebase's way (refusals: not an object, over 1,000 bytes, reserved names); tokens issued after carry them")
    func claims() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let user = try await SecurityTests.phoneSignIn(client)
            let localID = try #require(user.string("localId"))
            func set(_ claims: String) async throws -> HeraldClient.Answer {
                try await client.post(
                    SecurityTests.adminBase + "/accounts:update", json: ["localId": localID, "customAttributes": claims],
                    headers: TestConfiguration.adminHeader)
            }
            #expect(try await set("[1,2]").errorMessage == "INVALID_CLAIMS")
            #expect(try await set("{nope").errorMessage == "INVALID_CLAIMS")
            #expect(try await set(#"{"pad":""# + String(repeating: "x", count: 1000) + #""}"#).errorMessage == "CLAIMS_TOO_LARGE")
            #expect(
                try await set(#"{"role":"x","sub":"someone-else"}"#).errorMessage
                    == #"FORBIDDEN_CLAIM : Developer claim "sub" is reserved and cannot be specified."#)
            let byUser = try await client.post(
                Paths.v1 + "update", apiKey: TestConfiguration.apiKey,
                json: ["idToken": try #require(user.string("idToken")), "customAttributes": #"{"admin":true}"#])
            #expect(byUser.errorMessage?.hasPrefix("INSUFFICIENT_PERMISSION") == true)

            #expect(try await set(#"{"admin":true,"tier":2,"email":"spoof@example.com"}"#).status == 200)
            let lookup = try await client.post(
                SecurityTests.adminBase + "/accounts:lookup", json: ["localId": [localID]], headers: TestConfiguration.adminHeader)
            #expect(((lookup.json["users"] as? [[String: Any]])?.first?["customAttributes"] as? String)?.contains("tier") == true)
            let fresh = try await SecurityTests.phoneSignIn(client)
            let claims = AppleSignInTests.claims(fresh.string("idToken"))
            #expect(claims["admin"] as? Bool == true && claims["tier"] as? Int == 2)
            #expect(claims["email"] == nil, "a custom claim never overrides a standard one")
            #expect(claims["sub"] as? String == localID)
            // "{}" removes them.
            #expect(try await set("{}").status == 200)
            #expect(AppleSignInTests.claims(try await SecurityTests.phoneSignIn(client).string("idToken"))["admin"] == nil)
        }
    }
}
