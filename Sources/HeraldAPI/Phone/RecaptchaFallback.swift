import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird
import NIOCore

/// The reCAPTCHA fallback the iOS SDK opens when the silent push does not arrive: it reads
/// `getProjectConfig` (which authorized domain hosts the page), opens
/// `https://<domain>/__/auth/handler?apiKey=…&authType=verifyApp&ibi=<bundle>&eventId=…&v=…&clientId=…`
/// (or `appId=…`) in a web view, and waits for the page to send it to
/// `<scheme>://firebaseauth/link?deep_link_id=<URL whose query has authType, eventId, recaptchaToken>`,
/// where the scheme is the app's reversed client id or `app-<app id with dashes>`. The token then goes
/// into `sendVerificationCode` as `recaptchaToken` and is checked against siteverify as usual.
///
/// The page only ever returns to a scheme of an app configured for the project (`projects[].iosApps`),
/// never to a URL the request names, so it cannot be used to send tokens (or users) anywhere else.
struct RecaptchaFallback: Sendable {
    let resolver: ProjectResolver

    func register(on router: Router<HeraldRequestContext>) {
        for path in [
            "/identitytoolkit.googleapis.com/v1/projects", "/v1/projects", "/www.googleapis.com/identitytoolkit/v3/relyingparty/getProjectConfig",
        ] {
            router.get(RouterPath(path)) { request, _ in JSONWire.response(ProjectConfig(project: try resolver.project(for: request))) }
            router.post(RouterPath(path)) { request, _ in JSONWire.response(ProjectConfig(project: try resolver.project(for: request))) }
        }
        for path in [
            "/identitytoolkit.googleapis.com/v1/recaptchaParams", "/v1/recaptchaParams",
            "/www.googleapis.com/identitytoolkit/v3/relyingparty/getRecaptchaParam",
        ] {
            router.get(RouterPath(path)) { request, _ in JSONWire.response(RecaptchaParams(project: try resolver.project(for: request))) }
            router.post(RouterPath(path)) { request, _ in JSONWire.response(RecaptchaParams(project: try resolver.project(for: request))) }
        }
        router.get("/__/auth/handler") { request, _ in handler(request) }
    }

    /// `GetProjectConfigResponse`: the iOS SDK takes the page's host from `authorizedDomains`.
    struct ProjectConfig: Encodable {
        var kind = "identitytoolkit#GetProjectConfigResponse"
        var projectId: String
        var authorizedDomains: [String]

        init(project: ProjectSettings) {
            projectId = project.id
            authorizedDomains = project.authorizedDomains
        }
    }

    /// `GetRecaptchaParamResponse`.
    struct RecaptchaParams: Encodable {
        var kind = "identitytoolkit#GetRecaptchaParamResponse"
        var recaptchaSiteKey: String?

        init(project: ProjectSettings) {
            recaptchaSiteKey = project.appVerification.captchaSiteKey
        }
    }

    /// Where the page returns to, decided from the request and the project's apps; nil: refuse.
    static func callback(
        for query: [String: String], project: ProjectSettings
    ) -> (scheme: String, eventID: String)? {
        guard query["authType"] == "verifyApp", let bundleID = query["ibi"],
            let eventID = query["eventId"], (1...64).contains(eventID.count), eventID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
            let app = project.iosApps.first(where: { $0.bundleId == bundleID })
        else { return nil }
        let requested: String?
        if let clientID = query["clientId"] {
            requested = clientID.split(separator: ".").reversed().joined(separator: ".")
        } else if let appID = query["appId"] {
            requested = "app-" + appID.replacingOccurrences(of: ":", with: "-")
        } else if let callbackURL = query["callbackUrl"], let scheme = URLComponents(string: callbackURL)?.scheme {
            requested = scheme
        } else {
            requested = nil
        }
        guard let scheme = requested, app.callbackSchemes.contains(where: { $0.lowercased() == scheme.lowercased() }) else { return nil }
        return (scheme, eventID)
    }

    func handler(_ request: Request) -> Response {
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
        guard let key = query["apiKey"], let project = resolver.configuration.project(forAPIKey: key) else {
            return Self.page(.badRequest, "This verification link is not valid.")
        }
        guard let (scheme, eventID) = Self.callback(for: query, project: project) else {
            return Self.page(.badRequest, "This app is not set up to verify here.")
        }
        let settings = project.appVerification
        guard let siteKey = settings.captchaSiteKey, let script = settings.captchaWidgetScriptUrl else {
            return Self.page(.serviceUnavailable, "Verification is not configured for this app.")
        }
        let authDomain = project.authorizedDomains.first ?? "localhost"
        let config: [String: String] = [
            "siteKey": siteKey, "widget": settings.captchaWidget.rawValue,
            "callback": "\(scheme)://firebaseauth/link?deep_link_id=",
            "deepLink": "https://\(authDomain)/__/auth/callback?authType=verifyApp&eventId=\(eventID)",
        ]
        let nonce = SecureRandom.base64URL(bytes: 16)
        let separator = script.contains("?") ? "&" : "?"
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Verify you are human</title>
            <style>body{font-family:system-ui,sans-serif;display:flex;flex-direction:column;align-items:center;margin-top:15vh}</style>
            </head><body>
            <p>Confirm you are not a robot to continue.</p>
            <div id="captcha"></div>
            <p><a id="continue" hidden>Continue in the app</a></p>
            <script type="application/json" id="herald-config">\(Self.scriptSafeJSON(config))</script>
            <script nonce="\(nonce)">
            var config = JSON.parse(document.getElementById("herald-config").textContent);
            function heraldSolved(token) {
              var url = config.callback + encodeURIComponent(config.deepLink + "&recaptchaToken=" + encodeURIComponent(token));
              var link = document.getElementById("continue");
              link.href = url;
              link.hidden = false;
              document.body.setAttribute("data-callback", url);
              window.location.href = url;
            }
            window.heraldCaptchaLoaded = function () {
              var api = config.widget === "hcaptcha" ? window.hcaptcha
                : config.widget === "turnstile" ? window.turnstile
                : config.widget === "recaptchaEnterprise" ? window.grecaptcha.enterprise : window.grecaptcha;
              api.render("captcha", {sitekey: config.siteKey, callback: heraldSolved});
            };
            </script>
            <script nonce="\(nonce)" src="\(Self.attribute(script + separator + "onload=heraldCaptchaLoaded&render=explicit"))" async defer></script>
            </body></html>

            """
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=UTF-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        // The widget's own scripts load through 'strict-dynamic' from the nonced one; nothing else runs.
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; script-src 'nonce-\(nonce)' 'strict-dynamic'; style-src 'unsafe-inline' https:; img-src https: data:; "
            + "frame-src https:; connect-src https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// JSON that cannot end the script element it sits in.
    static func scriptSafeJSON(_ value: [String: String]) -> String {
        // By bytes: `replacingOccurrences` compares with Unicode rules, so a `>` followed by a combining mark
        // is no match for ">" and would stay raw.
        var out: [UInt8] = []
        for byte in JSONWire.encode(value).readableBytesView {
            switch byte {
            case UInt8(ascii: "<"): out.append(contentsOf: "\\u003c".utf8)
            case UInt8(ascii: ">"): out.append(contentsOf: "\\u003e".utf8)
            case UInt8(ascii: "&"): out.append(contentsOf: "\\u0026".utf8)
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Text for a double-quoted HTML attribute.
    static func attribute(_ text: String) -> String {
        Template.escapeHTML(text)
    }

    static func page(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=UTF-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Content-Security-Policy")!] = "default-src 'none'; frame-ancestors 'none'"
        let html = "<!doctype html><html><body><p>\(text)</p></body></html>\n"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}
