import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A fake siteverify endpoint (the protocol reCAPTCHA, hCaptcha and Turnstile share): takes the form
/// `secret`, `response`, `remoteip`, and answers with the verdict registered for the token, so one
/// server serves every captcha case of a test.
public final class FakeSiteverify: Sendable {
    /// What to answer for a token.
    public struct Verdict: Sendable {
        public var success: Bool
        /// reCAPTCHA v3/Enterprise-style score; hCaptcha and Turnstile send none.
        public var score: Double?
        public var errorCodes: [String]

        public init(success: Bool, score: Double? = nil, errorCodes: [String] = []) {
            self.success = success
            self.score = score
            self.errorCodes = errorCodes
        }
    }

    final class State: Sendable {
        let verdicts: Mutex<[String: Verdict]>
        let forms = Mutex<[[String: String]]>([])
        init(_ verdicts: [String: Verdict]) { self.verdicts = Mutex(verdicts) }
    }

    let state: State
    let server: BackgroundServer

    /// `http://127.0.0.1:<port>/siteverify`.
    public var url: String { "http://127.0.0.1:\(server.port)/siteverify" }

    /// `http://127.0.0.1:<port>/widget.js`: a captcha widget that solves itself. It offers the render API
    /// reCAPTCHA, hCaptcha and Turnstile share (`render(element, {sitekey, callback})`), calls the page's
    /// `onload` function and, a moment after `render`, the callback with `widgetToken`.
    public var widgetURL: String { "http://127.0.0.1:\(server.port)/widget.js" }
    /// The token the fake widget hands out (register a verdict for it).
    public static let widgetToken = "fake-widget-solved-token"

    /// Starts a server; tokens not registered get `success: false` with `invalid-input-response`.
    public static func start(secret: String, verdicts: [String: Verdict]) async throws -> FakeSiteverify {
        let state = State(verdicts)
        let router = Router()
        router.post("/siteverify") { request, context -> Response in
            let body = String(buffer: try await request.body.collect(upTo: 1 << 16))
            var form: [String: String] = [:]
            for pair in body.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                form[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            state.forms.withLock { $0.append(form) }
            var answer: [String: Any]
            if form["secret"] != secret {
                answer = ["success": false, "error-codes": ["invalid-input-secret"]]
            } else if let verdict = state.verdicts.withLock({ $0[form["response"] ?? ""] }) {
                answer = ["success": verdict.success, "error-codes": verdict.errorCodes]
                if let score = verdict.score { answer["score"] = score }
            } else {
                answer = ["success": false, "error-codes": ["invalid-input-response"]]
            }
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            return Response(
                status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: answer))))
        }
        router.get("/widget.js") { _, _ -> Response in
            let script = """
                (function () {
                  var query = (document.currentScript && document.currentScript.src.split("?")[1]) || "";
                  var onload = new URLSearchParams(query).get("onload");
                  var api = { render: function (element, options) {
                    window.fakeWidgetSiteKey = options.sitekey;
                    setTimeout(function () { options.callback("\(widgetToken)"); }, 100);
                    return 0;
                  } };
                  window.grecaptcha = api; window.hcaptcha = api; window.turnstile = api;
                  if (onload && typeof window[onload] === "function") { window[onload](); }
                })();
                """
            var fields = HTTPFields()
            fields[.contentType] = "application/javascript"
            return Response(status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(string: script)))
        }
        return FakeSiteverify(state: state, server: try await BackgroundServer.start(router: router))
    }

    init(state: State, server: BackgroundServer) {
        self.state = state
        self.server = server
    }

    /// Every form received, in order.
    public var received: [[String: String]] { state.forms.withLock { $0 } }

    public func stop() async { await server.stop() }
}
