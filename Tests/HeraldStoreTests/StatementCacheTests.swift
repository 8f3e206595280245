import Foundation
import HeraldCore
import Testing

@testable import HeraldStore

@Suite("SQLite's statement cache: keys hashed from a few words, told apart by the whole text")
struct StatementCacheTests {
    /// Two statements of the same length whose first, middle and last eight bytes agree: they differ only
    /// at byte 8, outside every word the key hashes.
    static let first = "SELECT 'x' AS chosen, 'some text in the middle' AS filler, 1 AS last_column"
    static let second = "SELECT 'y' AS chosen, 'some text in the middle' AS filler, 1 AS last_column"

    @Test("statements alike in every hashed word share a hash, and each still runs as itself")
    func collidingKeys() throws {
        let count = Self.first.utf8.count
        #expect(Self.second.utf8.count == count)
        let middle = (count - 8) / 2
        // Byte 8 lies outside the three words: [0, 8), [middle, middle + 8) and [count - 8, count).
        #expect(middle > 8 && count - 8 > 8)
        #expect(StatementText(Self.first).hashValue == StatementText(Self.second).hashValue)
        #expect(StatementText(Self.first) != StatementText(Self.second))

        let file = ScratchSQLiteFile("statements")
        defer { file.remove() }
        let connection = try SQLiteConnection(path: file.path, synchronous: .normal)
        for (sql, expected) in [(Self.first, "x"), (Self.second, "y"), (Self.first, "x"), (Self.second, "y")] {
            #expect(try connection.query(sql, []).first?.first?.string == expected)
        }
    }

    @Test("statements shorter than a word are hashed whole and run as themselves")
    func shortStatements() throws {
        #expect(StatementText("BEGIN") != StatementText("END"))
        let file = ScratchSQLiteFile("statements")
        defer { file.remove() }
        let connection = try SQLiteConnection(path: file.path, synchronous: .normal)
        _ = try connection.query("BEGIN", [])
        #expect(connection.inTransaction)
        _ = try connection.query("END", [])
        #expect(connection.inTransaction == false)
    }
}
