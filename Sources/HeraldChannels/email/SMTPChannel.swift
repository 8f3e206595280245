import Foundation
import HeraldCore
import HeraldCurl

/// Submits rendered messages to an SMTP server with libcurl (`smtp://` with STARTTLS required when
/// configured, or `smtps://`), and maps the server's reply: 2xx sent; 4xx and connection failures
/// retryable (greylisting, a full queue, a relay restarting); 5xx permanent, with the server's reply
/// text as the reason; a connection lost after the message started to leave is "uncertain".
public struct SMTPChannel: EmailChannel {
    public let name = "smtp"
    let client: CurlClient
    let settings: EmailSettings

    public init(client: CurlClient, settings: EmailSettings) {
        self.client = client
        self.settings = settings
    }

    /// The URL libcurl needs: the EHLO name goes in the path.
    var url: String {
        var base = settings.smtpURL
        if let schemeEnd = base.range(of: "://"), let slash = base[schemeEnd.upperBound...].firstIndex(of: "/") {
            base = String(base[..<slash])
        }
        return base + "/" + settings.heloName
    }

    public func deliver(_ message: MIMEMessage, envelopeFrom: String) async -> DeliveryOutcome {
        let reply = await client.send(
            CurlMailRequest(
                url: url, mailFrom: envelopeFrom, recipients: [message.to], message: message.rendered, username: settings.smtpUsername,
                password: settings.smtpPassword, requireTLS: settings.requireTLS, caFile: settings.caFile, timeout: settings.timeout))
        return Self.outcome(reply)
    }

    /// Classifies a submission by reply code first (libcurl reports most refusals as SEND_ERROR or
    /// WEIRD_SERVER_REPLY, which says nothing about whether to retry).
    static func outcome(_ reply: CurlMailReply) -> DeliveryOutcome {
        let text = reply.lastReply.map(Self.redacted) ?? reply.error ?? "no reply"
        if reply.curlCode == 0, (200..<300).contains(reply.replyCode) {
            return .sent(reference: nil)
        }
        switch reply.replyCode {
        case 400..<500:
            return .retryable(reason: "SMTP \(text)", retryAfter: nil, code: "smtp_\(reply.replyCode)")
        case 500..<600:
            return .permanent(reason: "SMTP \(text)", code: "smtp_\(reply.replyCode)")
        default:
            break
        }
        // No final 4xx/5xx reply: a transport or TLS problem. Once DATA's content started to leave, the
        // server may have queued the message whatever broke, so it is never resent blindly.
        if reply.curlCode == 64 {  // CURLE_USE_SSL_FAILED
            return .permanent(reason: "the SMTP server did not offer STARTTLS and email.smtp.requireTLS is true", code: "starttls_missing")
        }
        if reply.messageStarted {
            return .uncertain(
                reason: "the SMTP connection broke after the message started to leave: \(reply.error ?? "curl error \(reply.curlCode)")",
                code: "no_answer")
        }
        if [60, 77, 58].contains(reply.curlCode) {  // certificate verification, CA file, client certificate
            return .retryable(reason: "SMTP TLS verification failed: \(reply.error ?? "")", retryAfter: nil, code: "tls")
        }
        return .retryable(reason: "SMTP server unreachable: \(reply.error ?? "curl error \(reply.curlCode)")", retryAfter: nil, code: "unreachable")
    }

    /// Reply lines quoted for operators; servers sometimes echo parts of the message, and a sign-in
    /// link must not reach the logs or the dead-letter reason.
    static func redacted(_ line: String) -> String {
        let cut = String(line.prefix(300))
        return cut.contains("oobCode") ? "(reply text withheld: it quotes the message)" : cut
    }
}

/// Development provider: prints each mail's recipient, subject and text part to standard output (never
/// through the logging system). Allowed only with `devMode: true`, because the text holds the link.
public struct ConsoleEmailChannel: EmailChannel {
    public let name = "console"
    /// Writes one line (the executable passes `LineOutput.standardOutput.write`).
    let print: @Sendable (String) -> Void

    public init(print: @escaping @Sendable (String) -> Void) {
        self.print = print
    }

    public func deliver(_ message: MIMEMessage, envelopeFrom: String) async -> DeliveryOutcome {
        print("[console-email] to \(message.to), subject \"\(message.subject)\":\n\(message.text)")
        return .sent(reference: "console")
    }
}
