import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldRuntime
import Hummingbird

/// The action handler's pages for the account emails' links: a confirmation for `verifyEmail`,
/// `verifyAndChangeEmail` and `recoverEmail`, and a new-password form for `resetPassword`.
///
/// Opening the link changes nothing (mail scanners and previews fetch links first); the change happens
/// when the user submits the page's form, which posts back here. The form carries a token bound to the
/// code (HMAC under the sealing key), and a POST that a browser marks as cross-site, or whose `Origin`
/// names another host, is refused: another site cannot submit it. No script runs; the CSP is the status
/// page's (no script, forms post only to this origin, no framing).
struct AccountActionPages: Sendable {
    let configuration: HeraldConfiguration
    let emails: AccountEmails
    let keys: HeraldKeys

    static let modes: Set<String> = ["verifyEmail", "resetPassword", "verifyAndChangeEmail", "recoverEmail"]

    /// The form token for a code.
    func token(for code: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(("action-form:" + OobCode.storageHash(code)).utf8), using: keys.sealing)
        return Data(mac).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    /// The page for a link; nil when the request asked the app to handle the code (the caller redirects).
    func show(mode: String, query: [(name: String, value: String)], project: ProjectSettings) async -> Response? {
        func value(_ name: String) -> String? { query.first { $0.name == name }?.value }
        guard let code = value("oobCode"), let record = try? await emails.usable(code, project: project),
            AccountEmails.modes[record.requestType] == mode
        else {
            return Self.page(
                .badRequest, title: "Link no longer valid", "This link has expired, was already used, or is not for this account any more.")
        }
        if record.inApp, value("continueUrl") != nil { return nil }
        let hidden = [
            "mode": mode, "oobCode": code, "apiKey": value("apiKey") ?? "", "continueUrl": value("continueUrl") ?? "",
            "lang": value("lang") ?? "", "token": token(for: code),
        ]
        let fields = hidden.sorted { $0.key < $1.key }.map { "<input type=\"hidden\" name=\"\(h($0.key))\" value=\"\(h($0.value))\">" }
            .joined()
        let app = h(project.displayName)
        let body: String
        switch mode {
        case "resetPassword":
            body = """
                <p>Choose a new password for \(h(record.email)).</p>
                <form method="post">\(fields)<label>New password <input type="password" name="newPassword" autocomplete="new-password" required minlength="6"></label>
                <button>Save</button></form>
                """
        case "verifyEmail":
            body = "<p>Confirm that \(h(record.email)) is your address for \(app).</p><form method=\"post\">\(fields)<button>Confirm</button></form>"
        case "verifyAndChangeEmail":
            body =
                "<p>Use \(h(record.newEmail ?? "")) instead of \(h(record.email)) to sign in to \(app).</p><form method=\"post\">\(fields)<button>Confirm</button></form>"
        default:
            body =
                "<p>Put \(h(record.email)) back as the sign-in address of your \(app) account.</p><form method=\"post\">\(fields)<button>Restore</button></form>"
        }
        return Self.page(.ok, title: project.displayName, body, raw: true)
    }

    /// The form's POST: checks where it comes from and its token, then applies the code.
    func submit(_ request: Request) async throws -> Response {
        if request.headers[HTTPField.Name("Sec-Fetch-Site")!] == "cross-site" { return Self.refused() }
        if let origin = request.headers[HTTPField.Name("Origin")!], let authority = request.head.authority,
            URL(string: origin)?.host.map({ authority == $0 || authority.hasPrefix($0 + ":") }) != true
        {
            return Self.refused()
        }
        let form = try await StatusPage.form(request)
        guard let mode = form["mode"], Self.modes.contains(mode), let code = form["oobCode"], let key = form["apiKey"],
            let project = configuration.project(forAPIKey: key)
        else { return Self.page(.badRequest, title: "Not valid", "This form is not valid.") }
        guard let presented = form["token"], PasswordHash.constantTimeEqual(Array(presented.utf8), Array(token(for: code).utf8)) else {
            return Self.refused()
        }
        var fields: [String: Any] = ["oobCode": code]
        if mode == "resetPassword" { fields["newPassword"] = form["newPassword"] ?? "" }
        let body = try WireBody.parseWithFoundation(Array(try JSONSerialization.data(withJSONObject: fields)))
        do {
            let done: String
            if mode == "resetPassword" {
                guard (form["newPassword"] ?? "").isEmpty == false else { throw HeraldError(.missingNewPassword) }
                _ = try await emails.resetPassword(project: project, body: body)
                done = "Your password has been changed. You can now sign in with it."
            } else {
                let origin = EmailLinkSignIn.Origin(
                    clientKey: nil, locale: LocaleTag.validated(form["lang"]), isAdmin: false, apiKey: key, traceparent: .random())
                let updated = try await emails.apply(project: project, body: body, origin: origin)
                done = mode == "verifyEmail" ? "Your email address has been verified." : "You now sign in with \(updated.email ?? "")."
            }
            var page = "<p>\(h(done))</p>"
            if let target = form["continueUrl"], target.isEmpty == false,
                let checked = try? ContinueURL(target, authorizedDomains: project.authorizedDomains, appSchemes: project.emailLink.appSchemes)
            {
                page += "<p><a href=\"\(h(checked.text))\">Continue</a></p>"
            }
            return Self.page(.ok, title: project.displayName, page, raw: true)
        } catch let error as HeraldError {
            // The policy's refusal names what the password misses; the rest say the link is spent.
            let text =
                [.weakPassword, .passwordDoesNotMeetRequirements].contains(error.code)
                ? (error.detail ?? "The password is too weak.") : "This link has expired or was already used."
            return Self.page(.badRequest, title: project.displayName, text)
        }
    }

    private func h(_ text: String) -> String { StatusPage.h(text) }

    static func refused() -> Response {
        page(.forbidden, title: "Refused", "This form can only be sent from the page it came from.")
    }

    static func page(_ status: HTTPResponse.Status, title: String, _ content: String, raw: Bool = false) -> Response {
        let body = raw ? content : "<p>\(StatusPage.h(content))</p>"
        return StatusPage.html(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>\(StatusPage.h(title))</title><meta name=\"viewport\" content=\"width=device-width\"></head><body style=\"font-family: sans-serif; max-width: 32em; margin: 2em auto;\">\(body)</body></html>\n",
            status: status)
    }
}
