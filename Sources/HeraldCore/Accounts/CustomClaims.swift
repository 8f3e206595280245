import Foundation

/// Custom claims an admin puts on a user (`customAttributes`, firebase-admin `set_custom_user_claims`):
/// a JSON object of at most 1,000 bytes whose names are none of the claims a token's own meaning rests
/// on, checked as Firebase checks them. They are stored as given and copied into ID tokens.
public enum CustomClaims {
    /// Firebase's limit on the serialized claims.
    public static let maximumBytes = 1000
    /// Names Firebase refuses (`FORBIDDEN_CLAIM`): the JWT's and Firebase's own claims.
    public static let reserved: Set<String> = [
        "acr", "amr", "at_hash", "aud", "auth_time", "azp", "cnf", "c_hash", "exp", "firebase", "iat", "iss", "jti", "nbf", "nonce", "sub",
    ]

    /// The claims to store: nil for an empty object (claims removed), else the text as given.
    public static func validated(_ text: String) throws(HeraldError) -> String? {
        guard text.utf8.count <= maximumBytes else { throw HeraldError(.claimsTooLarge) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw HeraldError(.invalidClaims)
        }
        if let name = object.keys.sorted().first(where: reserved.contains) {
            throw HeraldError(.forbiddenClaim, "Developer claim \"\(name)\" is reserved and cannot be specified.")
        }
        return object.isEmpty ? nil : text
    }
}
