import Foundation
import HeraldCore
import Testing

@testable import HeraldStore

/// `SQLiteConnection.query` copies a statement's texts into one buffer the connection keeps, and binds
/// them from there without SQLite's own copy: these check that each statement reads its own texts
/// whatever size came before, through the buffer's growth, with empty and non-ASCII texts.
@Suite("SQLite's text bindings: one reused buffer, each statement reads its own texts")
struct SQLiteTextBindingTests {
    @Test("texts smaller and larger than the buffer, alternately, stored and read back as bound")
    func sizesAlternate() throws {
        let file = ScratchSQLiteFile("bindings")
        defer { file.remove() }
        let connection = try SQLiteConnection(path: file.path, synchronous: .normal)
        try connection.query("CREATE TABLE t (n INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)", [])
        let texts: [(String, String, String)] = [
            ("a", "", "é😀"),
            (String(repeating: "x", count: 700), String(repeating: "y", count: 700), "z"),  // past 1,024 together
            ("short", "again", ""),
            (String(repeating: "ж", count: 3_000), "mid", String(repeating: "q", count: 9_000)),  // past double the size
            ("", "", ""),
            ("tail", String(repeating: "w", count: 1_500), "end"),
        ]
        for (number, row) in texts.enumerated() {
            let returned = try connection.query(
                "INSERT INTO t (n, a, b, c) VALUES (?, ?, ?, ?) RETURNING a, b, c",
                [.integer(Int64(number)), .text(row.0), .text(row.1), .text(row.2)])
            #expect(returned.first?.map(\.string) == [row.0, row.1, row.2])
        }
        let rows = try connection.query("SELECT a, b, c, typeof(b) FROM t ORDER BY n", [])
        #expect(rows.count == texts.count)
        for (row, expected) in zip(rows, texts) {
            #expect(row[0].string == expected.0 && row[1].string == expected.1 && row[2].string == expected.2)
            // An empty text is bound as text, not as NULL.
            #expect(row[3].string == "text")
        }
        let matched = try connection.query("SELECT count(*) FROM t WHERE c = ?", [.text(String(repeating: "q", count: 9_000))])
        #expect(matched.first?.first?.int == 1)
    }
}
