import HeraldCore
import HeraldCurl
import Testing

@testable import HeraldChannels

/// How SMTP replies and transport failures become delivery outcomes (the end-to-end tests run the
/// common cases against aiosmtpd; these cover the ones a test server cannot be made to produce reliably).
@Suite("SMTP outcome mapping")
struct SMTPOutcomeTests {
    static func reply(_ curl: Int, _ code: Int, _ lines: [String] = [], started: Bool = false) -> CurlMailReply {
        CurlMailReply(curlCode: curl, replyCode: code, replyLines: lines, error: curl == 0 ? nil : "curl says no", messageStarted: started)
    }

    @Test("2xx sent, 4xx retryable, 5xx permanent with the server's reply line")
    func replyCodes() {
        #expect(SMTPChannel.outcome(Self.reply(0, 250, ["250 2.0.0 OK queued"])) == .sent(reference: nil))
        #expect(
            SMTPChannel.outcome(Self.reply(55, 421, ["421 4.7.0 Try again later"]))
                == .retryable(reason: "SMTP 421 4.7.0 Try again later", retryAfter: nil, code: "smtp_421"))
        #expect(
            SMTPChannel.outcome(Self.reply(55, 552, ["250 OK", "552-5.2.2 Mailbox full", "552 5.2.2 really"], started: true))
                == .permanent(reason: "SMTP 552 5.2.2 really", code: "smtp_552"))
    }

    @Test("a connection lost after DATA's content started to leave is uncertain, whatever libcurl calls it")
    func lostAfterData() {
        for curl in [8, 28, 52, 55, 56] {
            guard case .uncertain = SMTPChannel.outcome(Self.reply(curl, 354, ["354 End data with <CR><LF>.<CR><LF>"], started: true)) else {
                Issue.record("curl \(curl) after DATA was not uncertain")
                continue
            }
        }
        guard case .retryable = SMTPChannel.outcome(Self.reply(7, 0)) else {
            Issue.record("connect failure not retryable")
            return
        }
        guard case .retryable = SMTPChannel.outcome(Self.reply(56, 250, ["250 HELP"])) else {
            Issue.record("lost before DATA not retryable")
            return
        }
    }

    @Test("STARTTLS refused with requireTLS is permanent; reply lines quoting the link are withheld")
    func tlsAndRedaction() {
        #expect(
            SMTPChannel.outcome(Self.reply(64, 250, ["250 HELP"]))
                == .permanent(reason: "the SMTP server did not offer STARTTLS and email.smtp.requireTLS is true", code: "starttls_missing"))
        #expect(
            SMTPChannel.outcome(Self.reply(55, 554, ["554 rejected: https://x/?mode=signIn&oobCode=abc"], started: true))
                == .permanent(reason: "SMTP (reply text withheld: it quotes the message)", code: "smtp_554"))
    }
}
