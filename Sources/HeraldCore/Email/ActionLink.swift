import Foundation

/// The out-of-band code inside an email link: 40 random bytes (54 base64url characters, the length
/// Firebase's codes have), single use, stored only as its SHA-256.
public enum OobCode {
    public static func generate() -> String { SecureRandom.base64URL(bytes: 40) }

    /// What the store keeps (the code has 320 random bits, so a plain hash is enough).
    public static func storageHash(_ code: String) -> String { SHA256Hex.digest("oob:" + code) }
}

/// A `continueUrl` (where the link's handler sends the user back): absolute, with a scheme and a host,
/// and the host on the project's `authorizedDomains` — otherwise Herald would be an open redirect.
public struct ContinueURL: Sendable, Equatable {
    public let url: URL
    public var host: String { url.host?.lowercased() ?? "" }

    /// Why a continue URL was refused.
    public enum Problem: Error, Equatable {
        /// Not an absolute URI with a scheme and host: `INVALID_CONTINUE_URI`.
        case malformed
        /// The host is not authorized for the project: `UNAUTHORIZED_DOMAIN`.
        case unauthorized(host: String)
    }

    /// Parses `text` and checks its host against `authorizedDomains` (a domain authorizes itself and its
    /// subdomains; `localhost` matches only itself).
    public init(_ text: String, authorizedDomains: [String]) throws(Problem) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, host.isEmpty == false,
            scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }),
            text.contains(where: { $0.isWhitespace || $0.isNewline }) == false
        else { throw .malformed }
        self.url = url
        guard Self.isAuthorized(host: host.lowercased(), domains: authorizedDomains) else { throw .unauthorized(host: host.lowercased()) }
    }

    /// True when `host` is one of `domains` or a subdomain of one.
    public static func isAuthorized(host: String, domains: [String]) -> Bool {
        domains.contains { domain in
            let domain = domain.lowercased()
            return host == domain || host.hasSuffix("." + domain)
        }
    }
}

/// What the user clicks: `<actionUrl>?apiKey=…&mode=signIn&oobCode=…&continueUrl=…&lang=…`, the
/// parameters Firebase's handler and the iOS SDK's `isSignIn(withEmailLink:)` read.
public struct SignInLink: Sendable, Equatable {
    public var actionURL: String
    public var apiKey: String
    public var oobCode: String
    public var continueURL: String?
    public var languageCode: String?

    public init(actionURL: String, apiKey: String, oobCode: String, continueURL: String?, languageCode: String?) {
        self.actionURL = actionURL
        self.apiKey = apiKey
        self.oobCode = oobCode
        self.continueURL = continueURL
        self.languageCode = languageCode
    }

    /// The link text, every value percent-encoded to the unreserved set.
    public var text: String {
        var query = [("apiKey", apiKey), ("mode", "signIn"), ("oobCode", oobCode)]
        if let continueURL { query.append(("continueUrl", continueURL)) }
        query.append(("lang", languageCode ?? TemplateCatalog.defaultLocale))
        let separator = actionURL.contains("?") ? "&" : "?"
        return actionURL + separator + query.map { "\($0)=\(Self.percentEncode($1))" }.joined(separator: "&")
    }

    /// Strict percent-encoding: only RFC 3986 unreserved characters stay as they are.
    public static func percentEncode(_ value: String) -> String {
        var allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Where the action handler redirects a GET of the link: `continueUrl` with the link's other
    /// parameters appended (as Firebase's hosted handler does), so the app finishes the sign-in with a
    /// POST; nil when the link has no continue URL.
    public static func redirect(for query: [(name: String, value: String)]) -> String? {
        guard let target = query.first(where: { $0.name == "continueUrl" })?.value, target.isEmpty == false else { return nil }
        let rest = query.filter { $0.name != "continueUrl" }
        guard rest.isEmpty == false else { return target }
        let separator = target.contains("?") ? "&" : "?"
        let fragmentSplit = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(fragmentSplit[0])
        let fragment = fragmentSplit.count > 1 ? "#" + fragmentSplit[1] : ""
        return base + separator + rest.map { "\($0.name)=\(percentEncode($0.value))" }.joined(separator: "&") + fragment
    }
}
