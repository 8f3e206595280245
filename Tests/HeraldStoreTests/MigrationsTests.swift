import Foundation
import Testing

@testable import HeraldStore

@Suite("Schema steps for PostgreSQL")
struct MigrationsTests {
    /// What the word replacement must equal: a regular expression with word boundaries, as it was done before.
    static func byRegex(_ word: String, _ replacement: String, _ text: String) -> String {
        text.replacingOccurrences(of: "\\b\(word)\\b", with: replacement, options: .regularExpression)
    }

    @Test("every migration step and edge texts translate exactly as word-boundary regular expressions translate them")
    func wordReplacementMatchesRegex() {
        let edges = [
            "INTEGER", "xINTEGER", "INTEGERx", "INTEGER_", "_INTEGER", "a INTEGER,", "(INTEGER)", "INTEGERINTEGER", "INTEGER INTEGER", "",
            "REAL REALLY UNREAL", "BLOB\nBLOBS", "1INTEGER", "INTEGER1", "é INTEGER é",
        ]
        for text in Migrations.sqliteSteps + edges {
            var expected = text.replacingOccurrences(of: " WITHOUT ROWID", with: "")
            for (from, to) in [("INTEGER", "BIGINT"), ("REAL", "DOUBLE PRECISION"), ("BLOB", "BYTEA")] {
                expected = Self.byRegex(from, to, expected)
            }
            #expect(Migrations.postgresDDL(text) == expected, "\(text.prefix(80))")
        }
        #expect(
            Migrations.postgresDDL("CREATE TABLE t (a INTEGER, b REAL, c BLOB) WITHOUT ROWID")
                == "CREATE TABLE t (a BIGINT, b DOUBLE PRECISION, c BYTEA)")
    }
}
