import Foundation
import HeraldCore
import Testing

@Suite("a message's event lines (the ledger's events column)")
struct MessageEventTests {
    let at = Date(timeIntervalSince1970: 1_764_000_000.123)

    func roundTrip(_ detail: String?) -> (line: String, parsed: [MessageEvent]) {
        let line = MessageEvent(status: .failed, at: at, detail: detail).storedLine
        return (line, MessageEvent.parse(line))
    }

    @Test("a short detail is kept as it is; no detail reads back as none")
    func plain() {
        let (line, parsed) = roundTrip("attempt 2: HTTP 503")
        #expect(line == "1764000000123\tfailed\tattempt 2: HTTP 503\n")
        #expect(parsed == [MessageEvent(status: .failed, at: Date(timeIntervalSince1970: 1_764_000_000.123), detail: "attempt 2: HTTP 503")])
        #expect(roundTrip(nil).parsed.first?.detail == nil)
    }

    @Test("tabs and line breaks, CR LF included, become spaces: one event stays one line")
    func flattened() {
        let (line, parsed) = roundTrip("gateway said:\r\n\t{\"error\":\n\"busy\"}\r")
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(line.hasSuffix("\n"))
        #expect(parsed.count == 1)
        #expect(parsed.first?.detail == "gateway said:   {\"error\": \"busy\"} ")
    }

    @Test("a long detail is cut to 300 Characters, whether it is ASCII, multi-byte or has line breaks")
    func cut() {
        for detail in [String(repeating: "x", count: 301), String(repeating: "é", count: 200), String(repeating: "a\r\n", count: 150)] {
            let kept = try? #require(roundTrip(detail).parsed.first?.detail)
            #expect(kept?.count == min(300, detail.unicodeScalars.count), "\(detail.prefix(6))…")
        }
        let exact = String(repeating: "x", count: 300)
        #expect(roundTrip(exact).parsed.first?.detail == exact)
    }
}
