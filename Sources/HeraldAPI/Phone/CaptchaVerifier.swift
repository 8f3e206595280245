import Foundation
import HeraldCore
import HeraldCurl
import Logging

/// Checks captcha tokens against a siteverify-compatible endpoint (reCAPTCHA, hCaptcha and Turnstile
/// all take `secret`, `response`, `remoteip` as a form and answer `{"success": …, "score": …}`).
struct CaptchaVerifier: Sendable {
    let client: CurlClient
    let logger: Logger

    /// Passes, or throws CAPTCHA_CHECK_FAILED (refused, low score, not configured) or UNAVAILABLE
    /// (the endpoint could not be asked: failing closed, but retryable).
    func verify(_ token: String, remoteIP: String?, settings: ProjectSettings.AppVerification) async throws {
        guard let url = settings.captchaVerifyUrl, let secret = settings.captchaSecret else {
            throw HeraldError(.captchaCheckFailed, "Captcha verification is not configured for this project.")
        }
        var fields = [(name: "secret", value: secret), (name: "response", value: token)]
        if let remoteIP { fields.append((name: "remoteip", value: remoteIP)) }
        let form = FormEncoding.encode(fields)
        let response: CurlHTTPResponse
        do {
            response = try await client.perform(
                CurlHTTPRequest(
                    url: url, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Data(form.utf8), timeout: .seconds(5)))
        } catch {
            logger.error("captcha verification endpoint unreachable", metadata: ["error": .string(error.message)])
            throw HeraldError(.unavailable, "Captcha verification is unavailable. Try again later.", retryAfter: .seconds(5))
        }
        guard response.status == 200, let answer = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] else {
            logger.error("captcha verification endpoint answered badly", metadata: ["status": .stringConvertible(response.status)])
            throw HeraldError(.unavailable, "Captcha verification is unavailable. Try again later.", retryAfter: .seconds(5))
        }
        let success = answer["success"] as? Bool ?? false
        let score = (answer["score"] as? Double) ?? (answer["score"] as? Int).map(Double.init)
        guard AppVerificationCheck.captchaPasses(success: success, score: score, minScore: settings.captchaMinScore) else {
            logger.notice(
                "captcha refused",
                metadata: [
                    "success": .stringConvertible(success), "score": .string(score.map { String($0) } ?? "-"),
                    "errors": .string(((answer["error-codes"] as? [String]) ?? []).joined(separator: ",")),
                ])
            throw HeraldError(.captchaCheckFailed)
        }
    }
}
