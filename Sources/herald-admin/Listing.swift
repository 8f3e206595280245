import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a listing is printed: tab-separated rows, with a header row when standard output is a terminal
/// (so a pipe into `cut` or `awk` gets the rows it always got), or JSON.
struct ListingOptions: ParsableArguments {
    @Flag(help: "Print JSON instead of rows.") var json = false
    @Flag(name: .customLong("no-header"), help: "No header row, even on a terminal.") var noHeader = false

    /// True when a header row goes before the rows.
    var header: Bool { noHeader == false && isatty(STDOUT_FILENO) != 0 }
}

/// One listing's rows under named columns; the names are the header row and the JSON keys.
struct Listing {
    enum Value {
        case text(String)
        case number(Int)
        /// Not known (printed `?`, JSON null).
        case unknown

        var text: String {
            switch self {
            case .text(let text): text
            case .number(let number): String(number)
            case .unknown: "?"
            }
        }

        var json: Any {
            switch self {
            case .text(let text): text
            case .number(let number): number
            case .unknown: NSNull()
            }
        }
    }

    let columns: [String]
    var rows: [[Value]] = []
    /// Each row as printed; the values tab-separated unless the row was added with its own text (a
    /// listing whose rows scripts already read keeps them as they were).
    var lines: [String] = []

    init(_ columns: String...) { self.columns = columns }

    mutating func add(_ values: Value..., text: String? = nil) {
        precondition(values.count == columns.count, "a row of \(values.count) values under \(columns.count) columns")
        rows.append(values)
        lines.append(text ?? values.map(\.text).joined(separator: "\t"))
    }

    /// The rows as objects keyed by the columns.
    var objects: [[String: Any]] {
        rows.map { Dictionary(uniqueKeysWithValues: zip(columns, $0.map(\.json))) }
    }

    /// Prints the rows (with a header on a terminal); with `--json` prints `{key: [objects], …extra}`.
    func write(_ options: ListingOptions, key: String, extra: [String: Any] = [:]) throws {
        if options.json {
            var document = extra
            document[key] = objects
            let data = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])
            Swift.print(String(decoding: data, as: UTF8.self))
            return
        }
        if options.header { print(columns.joined(separator: "\t")) }
        for line in lines { print(line) }
    }
}
