import Crypto
import Foundation

/// `X-Twilio-Signature`, as Twilio's own libraries compute it: base64 of HMAC-SHA1 under the auth
/// token over the URL Twilio called (as configured, query included), followed by each form parameter's
/// name and value, names in byte order and a repeated name's values in byte order, with no separators.
public enum TwilioSignature {
    public static func sign(url: String, parameters: [(name: String, value: String)], authToken: String) -> String {
        var text = url
        let byName = Dictionary(grouping: parameters, by: \.name)
        for name in byName.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            for value in byName[name]!.map(\.value).sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
                text += name + value
            }
        }
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(authToken.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// Whether `signature` is Twilio's for the request, over `url` as given or with its scheme's
    /// default port added or taken out (Twilio signs either form). Compared in constant time.
    public static func isValid(
        _ signature: String, url: String, parameters: [(name: String, value: String)], authToken: String
    ) -> Bool {
        var matched = false
        for candidate in portVariants(of: url) {
            // Every candidate is computed and compared, so the time does not say which matched.
            let expected = sign(url: candidate, parameters: parameters, authToken: authToken)
            if constantTimeEquals(Array(expected.utf8), Array(signature.utf8)) { matched = true }
        }
        return matched
    }

    /// `url`, and `url` with its scheme's default port added (`:443`, `:80`) or removed.
    static func portVariants(of url: String) -> [String] {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), let host = components.host else {
            return [url]
        }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        guard let defaultPort else { return [url] }
        let prefix = "\(components.scheme!)://\(host)"
        let rest = String(url.dropFirst(prefix.count))
        if rest.hasPrefix(":\(defaultPort)") {
            return [url, prefix + rest.dropFirst(":\(defaultPort)".count)]
        }
        if rest.hasPrefix(":") { return [url] }
        return [url, prefix + ":\(defaultPort)" + rest]
    }
}

/// Vonage's `sig`, for signed requests and signed delivery receipts: the parameters but `sig` in key
/// order, each as `&key=value` with `&` and `=` in the value replaced by `_`; then, in `md5hash` mode,
/// the hex MD5 of that text followed by the signature secret, or in `sha256` mode the hex
/// HMAC-SHA256 of the text under the secret.
public enum VonageSignature {
    public enum Method: String, Sendable, CaseIterable {
        case md5hash
        case sha256
    }

    public static func sign(_ parameters: [String: String], secret: String, method: Method) -> String {
        var text = ""
        for key in parameters.keys.sorted() where key != "sig" {
            let value = parameters[key]!.replacingOccurrences(of: "&", with: "_").replacingOccurrences(of: "=", with: "_")
            text += "&\(key)=\(value)"
        }
        // Every signed request is signed here: SHA256Hex.hex, not String(format:) per byte.
        switch method {
        case .md5hash:
            return SHA256Hex.hex(Array(Insecure.MD5.hash(data: Data((text + secret).utf8))))
        case .sha256:
            return SHA256Hex.hex(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(secret.utf8)))))
        }
    }

    /// Whether the parameters carry a good `sig` and a `timestamp` within `tolerance` of `now`.
    public static func isValid(_ parameters: [String: String], secret: String, method: Method, now: Date, tolerance: TimeInterval = 300)
        -> Bool
    {
        guard let signature = parameters["sig"], let timestamp = parameters["timestamp"].flatMap(Double.init),
            abs(now.timeIntervalSince1970 - timestamp) <= tolerance
        else { return false }
        let expected = sign(parameters, secret: secret, method: method)
        return constantTimeEquals(Array(expected.utf8), Array(signature.lowercased().utf8))
    }
}

/// Telnyx's webhook signature: Ed25519 over `"<telnyx-timestamp>|<raw body>"` under the account's
/// public key, base64 in `telnyx-signature-ed25519`.
public enum TelnyxSignature {
    public static func isValid(
        signature: String, timestamp: String, body: Data, publicKey: Data, now: Date, tolerance: TimeInterval = 300
    ) -> Bool {
        guard let seconds = Double(timestamp), abs(now.timeIntervalSince1970 - seconds) <= tolerance,
            let signatureBytes = Data(base64Encoded: signature), signatureBytes.count == 64,
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey)
        else { return false }
        return key.isValidSignature(signatureBytes, for: Data((timestamp + "|").utf8) + body)
    }

    /// Signs as Telnyx does (for the fake that stands in for it).
    public static func sign(timestamp: String, body: Data, privateKey: Curve25519.Signing.PrivateKey) throws -> String {
        try privateKey.signature(for: Data((timestamp + "|").utf8) + body).base64EncodedString()
    }
}
