import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// `accounts:batchCreate` as firebase-admin's `import_users` sends it (URL-safe base64) and as a
/// `firebase auth:export` file holds users (standard base64).
@Suite("User import: Firebase's hashes sign in, are replaced on first use, and bad records are reported by index")
struct UserImportTests {
    static let key = TestConfiguration.apiKey
    static let path = "/identitytoolkit.googleapis.com/v1/projects/\(TestConfiguration.projectID)/accounts:batchCreate"

    @Test("a user exported with Firebase's published scrypt vector keeps its profile and signs in with its password")
    func firebaseScryptExport() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            let exported: [String: any Sendable] = [
                "localId": "imported-uid-1", "email": "User1@Example.com", "emailVerified": true, "displayName": "User One",
                "phoneNumber": "+15555550111", "disabled": false, "customAttributes": "{\"role\":\"editor\"}",
                "passwordHash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
                "salt": "42xEC+ixf3L2lw==", "createdAt": "1486324817000", "lastSignedInAt": "1486324819000",
                "providerUserInfo": [
                    ["providerId": "password", "rawId": "user1@example.com", "email": "user1@example.com"] as [String: any Sendable],
                    ["providerId": "apple.com", "rawId": "001234.abcdef", "email": "user1@example.com"],
                ],
            ]
            let imported = try await client.post(
                Self.path,
                json: [
                    "users": [exported], "hashAlgorithm": "SCRYPT",
                    "signerKey": "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
                    "saltSeparator": "Bw==", "rounds": 8, "memoryCost": 14,
                ], headers: TestConfiguration.adminHeader)
            #expect(imported.status == 200, "\(imported.errorMessage ?? "")")
            #expect((imported.json["error"] as? [Any])?.isEmpty == true)

            let before = try await harness.withStore { try await $0.user(projectID: TestConfiguration.projectID, localID: "imported-uid-1") }
            let user = try #require(before)
            #expect(user.email == "user1@example.com" && user.emailVerified && user.displayName == "User One")
            #expect(user.phoneNumber == "+15555550111" && user.customAttributes == "{\"role\":\"editor\"}")
            #expect(user.identities.map(\.federatedID) == ["001234.abcdef"])
            #expect(user.createdAt.millisecondsSince1970 == 1_486_324_817_000)
            #expect(user.passwordHash?.hasPrefix("firebase-scrypt$14$8$") == true)

            #expect(try await PasswordAccountTests.signIn(client, "user1@example.com", "wrong").errorMessage == "INVALID_PASSWORD")
            let signedIn = try await PasswordAccountTests.signIn(client, "user1@example.com", "user1password")
            #expect(signedIn.status == 200, "\(signedIn.errorMessage ?? "")")
            #expect(signedIn.string("localId") == "imported-uid-1")
            let claims = AppleSignInTests.claims(signedIn.string("idToken"))
            #expect(claims["role"] as? String == "editor")

            let after = try await harness.withStore { try await $0.user(projectID: TestConfiguration.projectID, localID: "imported-uid-1") }
            #expect(after?.passwordHash?.hasPrefix("pbkdf2-sha256$210000$") == true, "the first sign-in made the hash Herald's")
            #expect(try await PasswordAccountTests.signIn(client, "user1@example.com", "user1password").status == 200)
            #expect(harness.logs.text.contains("lSrfV15cpx95") == false && harness.logs.text.contains("user1password") == false)
        }
    }

    @Test("malformed records are reported by index and the rest imported; an unverifiable hash answers as a wrong password")
    func errorsByIndex() async throws {
        let harness = try APIHarness()
        try await harness.run { client, _ in
            #expect(try await PasswordAccountTests.signUp(client, "taken@example.com", "taken-pass").status == 200)
            let users: [[String: any Sendable]] = [
                ["localId": "ok-1", "email": "ok1@example.com", "passwordHash": "AAEC", "salt": "AA"],
                ["email": "no-uid@example.com"],
                ["localId": "bad-email", "email": "not an address"],
                ["localId": "bad-phone", "phoneNumber": "+1error"],
                ["localId": "taken", "email": "taken@example.com"],
                ["localId": "ok-1", "email": "again@example.com"],
                ["localId": "bad-claims", "customAttributes": "{\"sub\":\"x\"}"],
                ["localId": "ok-2", "email": "ok2@example.com", "emailVerified": "maybe"],
            ]
            let answer = try await client.post(
                Self.path, json: ["users": users, "hashAlgorithm": "MD5", "rounds": 0], headers: TestConfiguration.adminHeader)
            #expect(answer.status == 200, "\(answer.errorMessage ?? "")")
            let errors = try #require(answer.json["error"] as? [[String: Any]])
            #expect(errors.compactMap { $0["index"] as? Int } == [1, 2, 3, 4, 5, 6, 7])
            #expect(errors.first?["message"] as? String == "localId is missing")
            #expect(errors.contains { ($0["message"] as? String) == "email exists in other account in database" })
            #expect(errors.contains { ($0["message"] as? String)?.contains("AAEC") == true } == false)
            // The MD5 user is there; its hash cannot be checked, so its password is refused until a reset.
            #expect(try await PasswordAccountTests.signIn(client, "ok1@example.com", "anything").errorMessage == "INVALID_PASSWORD")
            let reset = try await client.post(
                Paths.legacy + "getOobConfirmationCode", apiKey: Self.key, json: ["requestType": "PASSWORD_RESET", "email": "ok1@example.com"])
            #expect(reset.status == 200)

            let none: [String] = []
            let empty = try await client.post(Self.path, json: ["users": none], headers: TestConfiguration.adminHeader)
            #expect(empty.errorMessage == "MISSING_USER_ACCOUNT")
            let one: [[String: String]] = [["localId": "x"]]
            let rot13 = try await client.post(Self.path, json: ["users": one, "hashAlgorithm": "ROT13"], headers: TestConfiguration.adminHeader)
            #expect(rot13.errorMessage?.hasPrefix("INVALID_ARGUMENT") == true)
            let anonymous = try await client.post(Self.path, json: ["users": one])
            #expect(anonymous.status == 403, "admins only")
        }
    }
}
