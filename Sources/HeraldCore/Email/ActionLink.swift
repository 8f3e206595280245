import Foundation

/// The out-of-band code inside an email link: 40 random bytes (54 base64url characters, the length
/// Firebase's codes have), single use, stored only as its SHA-256.
public enum OobCode {
    public static func generate() -> String { SecureRandom.base64URL(bytes: 40) }

    /// What the store keeps (the code has 320 random bits, so a plain hash is enough).
    public static func storageHash(_ code: String) -> String { SHA256Hex.digest("oob:" + code) }
}

/// A `continueUrl` (where the link's handler sends the user back), parsed strictly and written out again
/// from its parts, so that the address Herald checked is the address a browser visits.
///
/// Foundation's URL parser and a browser's (WHATWG) disagree on text such as `https://evil.com\@app.com/`
/// (a userinfo for one, a path for the other), so anything where they could disagree is refused: a
/// backslash, a userinfo (`@` before the host), whitespace, control or non-ASCII characters. Only `http`,
/// `https` and the project's own app schemes are accepted (never `javascript:`, `data:`, `file:` …), and
/// for http(s) the host must be one of the project's `authorizedDomains` or a subdomain of one.
public struct ContinueURL: Sendable, Equatable {
    /// Lowercased.
    public let scheme: String
    /// Lowercased; empty only for an app scheme URL without an authority (`com.example.app:/done`).
    public let host: String
    /// The URL as Herald writes it (and redirects to): rebuilt from the parsed parts, percent-encoded.
    public let text: String

    /// Schemes a web continue URL may use.
    public static let webSchemes: Set<String> = ["http", "https"]
    /// Schemes no configuration may allow as an app scheme.
    public static let forbiddenSchemes: Set<String> = ["javascript", "data", "file", "vbscript", "blob", "about", "filesystem", "ftp", "ws", "wss"]

    /// Why a continue URL was refused.
    public enum Problem: Error, Equatable {
        /// Not an absolute http(s) or app-scheme URL that parses unambiguously: `INVALID_CONTINUE_URI`.
        case malformed
        /// The host is not authorized for the project: `UNAUTHORIZED_DOMAIN`.
        case unauthorized(host: String)
    }

    /// Parses `text`, checks its host against `authorizedDomains` (a domain authorizes itself and its
    /// subdomains; `localhost` matches only itself) and its scheme against http, https and `appSchemes`.
    public init(_ text: String, authorizedDomains: [String], appSchemes: [String] = []) throws(Problem) {
        // Printable ASCII only, no backslash: nothing a browser would strip, fold or read as a slash.
        guard text.utf8.count <= 2048, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }),
            let colon = text.firstIndex(of: ":")
        else { throw .malformed }
        let scheme = text[..<colon].lowercased()
        guard let first = scheme.first, first.isLetter, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else {
            throw .malformed
        }
        let isWeb = Self.webSchemes.contains(scheme)
        guard isWeb || appSchemes.contains(scheme) else { throw .malformed }
        var rest = text[text.index(after: colon)...]

        var host = ""
        var port = ""
        let hasAuthority = rest.hasPrefix("//")
        if hasAuthority {
            rest = rest.dropFirst(2)
            let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            rest = rest[authorityEnd...]
            guard authority.contains("@") == false else { throw .malformed }
            var hostPart = authority
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { throw .malformed }
                hostPart = authority[...close]
                let inside = authority[authority.index(after: authority.startIndex)..<close]
                guard inside.isEmpty == false, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), IPAddress(String(inside)) != nil else {
                    throw .malformed
                }
                let afterHost = authority[authority.index(after: close)...]
                if afterHost.isEmpty == false {
                    guard afterHost.hasPrefix(":") else { throw .malformed }
                    port = String(afterHost.dropFirst())
                }
            } else if let portColon = authority.firstIndex(of: ":") {
                hostPart = authority[..<portColon]
                port = String(authority[authority.index(after: portColon)...])
            }
            host = hostPart.lowercased()
            if hostPart.hasPrefix("[") == false {
                let labels = host.split(separator: ".", omittingEmptySubsequences: false)
                guard
                    labels.allSatisfy({ label in
                        label.isEmpty == false && label.count <= 63 && label.first != "-" && label.last != "-"
                            && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
                    }) || (host.isEmpty && isWeb == false)
                else { throw .malformed }
            }
            if port.isEmpty == false {
                guard port.count <= 5, port.allSatisfy(\.isNumber), let number = Int(port), number <= 65535 else { throw .malformed }
            }
        }
        if isWeb, host.isEmpty { throw .malformed }

        let fragmentStart = rest.firstIndex(of: "#")
        let beforeFragment = rest[..<(fragmentStart ?? rest.endIndex)]
        let queryStart = beforeFragment.firstIndex(of: "?")
        var path = String(beforeFragment[..<(queryStart ?? beforeFragment.endIndex)])
        let query = queryStart.map { String(beforeFragment[beforeFragment.index(after: $0)...]) }
        let fragment = fragmentStart.map { String(rest[rest.index(after: $0)...]) }
        if isWeb, path.isEmpty { path = "/" }
        // A path that starts with // would read as an authority once written after a scheme without one.
        if host.isEmpty, path.hasPrefix("//") { throw .malformed }

        var written = scheme + ":"
        if hasAuthority { written += "//" + host + (port.isEmpty ? "" : ":" + port) }
        written += try Self.encode(path, keeping: Self.pathCharacters)
        if let query { written += "?" + (try Self.encode(query, keeping: Self.queryCharacters)) }
        if let fragment { written += "#" + (try Self.encode(fragment, keeping: Self.queryCharacters)) }

        self.scheme = scheme
        self.host = host
        self.text = written
        if isWeb, Self.isAuthorized(host: host, domains: authorizedDomains) == false { throw .unauthorized(host: host) }
    }

    /// RFC 3986 `pchar` and `/`: what stays as it is in a path.
    static let pathCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/")
    /// Query and fragment also keep `?`.
    static let queryCharacters = pathCharacters.union(["?"])

    /// Percent-encodes every character outside `keeping`; an existing `%XX` stays, a stray `%` is refused.
    static func encode(_ part: String, keeping: Set<Character>) throws(Problem) -> String {
        var out = ""
        var characters = part.makeIterator()
        while let character = characters.next() {
            if character == "%" {
                guard let high = characters.next(), let low = characters.next(), high.isHexDigit, low.isHexDigit else { throw .malformed }
                out += "%" + String(high).uppercased() + String(low).uppercased()
            } else if keeping.contains(character) {
                out.append(character)
            } else {
                for byte in String(character).utf8 { out += String(format: "%%%02X", byte) }
            }
        }
        return out
    }

    /// True when `host` is one of `domains` exactly, or a subdomain of a domain listed as `*.example.com`
    /// (which does not cover `example.com` itself). Subdomains are not implied: a user-content or dangling
    /// host under an authorized domain would otherwise receive codes.
    public static func isAuthorized(host: String, domains: [String]) -> Bool {
        domains.contains { domain in
            let domain = domain.lowercased()
            if domain.hasPrefix("*.") { return host.hasSuffix(domain.dropFirst()) && host.count > domain.count - 1 }
            return host == domain
        }
    }
}

/// What the user clicks: `<actionUrl>?apiKey=…&mode=signIn&oobCode=…&continueUrl=…&lang=…`, the
/// parameters Firebase's handler and the iOS SDK's `isSignIn(withEmailLink:)` read. The account emails'
/// links are the same with another `mode`: `verifyEmail`, `resetPassword`, `verifyAndChangeEmail`,
/// `recoverEmail`.
public struct SignInLink: Sendable, Equatable {
    public var actionURL: String
    public var mode: String
    public var apiKey: String
    public var oobCode: String
    public var continueURL: String?
    public var languageCode: String?
    /// ActionCodeSettings for opening the link in the app (with `handleCodeInApp`).
    public var app: AppSettings?

    /// The apps that should open the link, as ActionCodeSettings name them. They travel in the link as
    /// Firebase Dynamic Links' long-link parameters did: `ibi` (iOS bundle id), `apn` (Android package),
    /// `amv` (Android minimum version) and `afl` (the web fallback, present unless the Android app should
    /// be installed): the app receives the link through a universal link or app link on the action
    /// domain; a browser without the app gets the action handler, which honours `apn` without `afl`.
    public struct AppSettings: Sendable, Equatable {
        public var iosBundleId: String?
        public var androidPackageName: String?
        public var androidInstallApp: Bool
        public var androidMinimumVersion: String?

        public init(iosBundleId: String?, androidPackageName: String?, androidInstallApp: Bool, androidMinimumVersion: String?) {
            self.iosBundleId = iosBundleId
            self.androidPackageName = androidPackageName
            self.androidInstallApp = androidInstallApp
            self.androidMinimumVersion = androidMinimumVersion
        }
    }

    public init(
        actionURL: String, apiKey: String, oobCode: String, continueURL: String?, languageCode: String?, app: AppSettings? = nil,
        mode: String = "signIn"
    ) {
        self.actionURL = actionURL
        self.mode = mode
        self.apiKey = apiKey
        self.oobCode = oobCode
        self.continueURL = continueURL
        self.languageCode = languageCode
        self.app = app
    }

    /// The link text, every value percent-encoded to the unreserved set.
    public var text: String {
        var query = [("apiKey", apiKey), ("mode", mode), ("oobCode", oobCode)]
        if let continueURL { query.append(("continueUrl", continueURL)) }
        query.append(("lang", languageCode ?? TemplateCatalog.defaultLocale))
        if let app {
            if let bundle = app.iosBundleId { query.append(("ibi", bundle)) }
            if let package = app.androidPackageName {
                query.append(("apn", package))
                if let version = app.androidMinimumVersion { query.append(("amv", version)) }
                if app.androidInstallApp == false, let continueURL { query.append(("afl", continueURL)) }
            }
        }
        let separator = actionURL.contains("?") ? "&" : "?"
        return actionURL + separator + query.map { "\($0)=\(Self.percentEncode($1))" }.joined(separator: "&")
    }

    /// Strict percent-encoding: only RFC 3986 unreserved characters stay as they are.
    public static func percentEncode(_ value: String) -> String {
        var allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Where the action handler redirects a GET of the link: the checked continue URL (as rebuilt, never
    /// the raw text) with the link's other parameters appended, as Firebase's hosted handler does, so the
    /// app finishes the sign-in with a POST.
    public static func redirect(to target: ContinueURL, parameters: [(name: String, value: String)]) -> String {
        let rest = parameters.filter { $0.name != "continueUrl" }
        guard rest.isEmpty == false else { return target.text }
        let fragmentSplit = target.text.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(fragmentSplit[0])
        let fragment = fragmentSplit.count > 1 ? "#" + fragmentSplit[1] : ""
        let separator = base.contains("?") ? "&" : "?"
        return base + separator + rest.map { "\($0.name)=\(percentEncode($0.value))" }.joined(separator: "&") + fragment
    }
}
