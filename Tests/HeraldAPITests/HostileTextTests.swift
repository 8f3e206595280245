import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import Hummingbird
import Testing

@testable import HeraldAPI

/// Text from clients, broker users and providers reaches the status page and the ledger: it is escaped
/// where it is shown and validated where it enters.
@Suite("Hostile text from clients, producers and providers")
struct HostileTextTests {
    static let hostile = [
        "\u{0600}<meta http-equiv=refresh content=0;url=https://phish.example/>\u{0301}",
        "\u{0600}<form action=/admin/blocks/lift method=post>\u{0301}\u{0600}<input type=hidden name=prefix value=120255>\u{0301}",
        "\"\u{0338} autofocus x=\"\u{0600}<b>\u{0301}", "'\u{0301}><i>",
    ]

    /// The page's own markup: the `<` and `"` bytes it writes whatever the values are.
    static func markup(_ html: String) -> (tags: Int, quotes: Int) {
        (html.utf8.count { $0 == UInt8(ascii: "<") }, html.utf8.count { $0 == UInt8(ascii: "\"") })
    }

    static func message(_ text: String) -> MessageRecord {
        MessageRecord(
            id: UUID(), project: text, type: .sms, destination: "+15555550100", template: text, locale: text, status: .failed, attempts: 1,
            provider: text, providerMessageID: text, producer: text, segments: 1, encoding: text, lastError: text, createdAt: Date(),
            updatedAt: Date(), storedEvents: [MessageEvent(status: .failed, at: Date(), detail: text)])
    }

    @Test("the message view, a page's title and a form's hidden values write no markup of a hostile value's", arguments: hostile)
    func statusPageMarkup(_ text: String) {
        let session = AdminSession(key: HeraldKeys(master: Data(repeating: 7, count: 32)).adminSessions, tokens: [String(repeating: "t", count: 32)])
        func render(_ value: String) -> String {
            StatusPage.page(value, StatusPage.messageView(Self.message(value)), caller: .bearer, session: session)
                + StatusPage.postForm("/admin/dead-letters/replay", ["type": "sms", "id": value], button: value, caller: .bearer, session: session)
                + "<p title=\"\(RecaptchaFallback.attribute(value))\">"
        }
        let benign = Self.markup(render("x"))
        let page = Self.markup(render(text))
        #expect(page.tags == benign.tags, "no < of the value's reaches the page")
        #expect(page.quotes == benign.quotes, "no quote of the value's ends an attribute")
        #expect(RecaptchaFallback.scriptSafeJSON(["eventId": text]).utf8.contains { $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") } == false)
    }

    @Test("the status page forbids scripts outright")
    func scriptSource() {
        let response = StatusPage.html("<p>x</p>")
        #expect(response.headers[.contentSecurityPolicy]?.contains("script-src 'none'") == true)
    }

    @Test("a client's locale that is not a BCP 47 tag of at most 35 characters is dropped (the default applies), and the request is answered")
    func locales() async throws {
        let harness = try APIHarness {
            $0.emailLink = #"{enabled: true, linkTTL: 1h, actionUrl: "https://auth.example.com/__/auth/action"}"#
        }
        try await harness.run { client, admin in
            let cases: [(header: String?, languageCode: String?, kept: String?)] = [
                (nil, Self.hostile[0], nil), (nil, "en\u{1b}[2J\u{1b}[H\nstatus     delivered", nil), (nil, String(repeating: "a", count: 40), nil),
                (nil, "de-DE-x-" + String(repeating: "abcdefgh-", count: 4), nil), ("pt_BR", nil, "pt_BR"),
                ("zh-Hant-TW", "\u{0600}<b>", "zh-Hant-TW"),
                ("<b>", "es-419", "es-419"),
            ]
            for (index, item) in cases.enumerated() {
                var json: [String: any Sendable] = [
                    "requestType": "EMAIL_SIGNIN", "email": "locale\(index)@example.com", "continueUrl": "https://app.example.com/done",
                ]
                json["languageCode"] = item.languageCode
                let sent = try await client.post(
                    Paths.v1 + "sendOobCode", apiKey: TestConfiguration.apiKey, json: json,
                    headers: item.header.map { [("X-Firebase-Locale", $0)] } ?? [])
                #expect(sent.status == 200, "\(sent.errorMessage ?? "")")
                let jobs = try await harness.publishedEmailJobs(admin)
                #expect(jobs.count == 1)
                #expect(jobs.first?.1.locale == item.kept, "case \(index)")
            }
            let phone = try await client.post(
                Paths.v1 + "sendVerificationCode", apiKey: TestConfiguration.apiKey,
                json: ["phoneNumber": "+15555550177", "clientType": "CLIENT_TYPE_IOS"],
                headers: [("X-Firebase-Locale", "en-US;q=0.9 <b>")])
            #expect(phone.status == 200)
            #expect(try await harness.publishedJobs(admin).first?.1.locale == nil)
        }
    }
}
