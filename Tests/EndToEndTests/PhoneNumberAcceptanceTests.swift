import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Herald's number parsing against the phonenumbers package (libphonenumber's metadata), over every
/// region's example numbers: as E.164, and typed with the national trunk prefix after the calling code.
@Suite("Phone numbers against libphonenumber's metadata")
struct PhoneNumberAcceptanceTests {
    struct Example: Decodable {
        var region: String
        var type: String
        var form: String
        var input: String
        var expected: String?
    }

    static func corpus() async throws -> [Example] {
        let script = TestConfiguration.repositoryRoot.appendingPathComponent("Tests/python/phone_corpus.py").path
        let output = try await shell("\(shellQuoted(SMTPSink.python)) \(shellQuoted(script))")
        return try output.split(separator: "\n").map { try JSONDecoder().decode(Example.self, from: Data($0.utf8)) }
    }

    @Test(
        "every mobile and fixed-line example phonenumbers finds valid is accepted as that E.164 number, also typed with its trunk prefix; none becomes another number"
    )
    func agreesWithLibphonenumber() async throws {
        let examples = try await Self.corpus().filter { $0.expected != nil }
        var wrong: [String] = []
        var refused: [String] = []
        var agreed: [String: Int] = [:]
        for example in examples {
            let parsed = try? PhoneNumber(parsing: example.input)
            if parsed?.e164 == example.expected {
                agreed[example.form, default: 0] += 1
            } else if let parsed {
                wrong.append("\(example.region) \(example.type) \(example.input) → \(parsed.e164), not \(example.expected ?? "")")
            } else if example.type != "tollFree" {
                // Toll-free numbers take no SMS; Herald's lengths are those of subscriber numbers.
                refused.append("\(example.region) \(example.type) \(example.input)")
            }
        }
        let e164 = examples.filter { $0.form == "e164" }.count
        let trunk = examples.count - e164
        print("phone corpus: \(agreed["e164", default: 0]) of \(e164) E.164 examples, \(agreed["trunk", default: 0]) of \(trunk) with a trunk prefix")
        #expect(e164 > 500 && trunk > 300, "the corpus covers the world")
        #expect(wrong.isEmpty, "\(wrong.count) read as another number: \(wrong.prefix(20).joined(separator: "; "))")
        #expect(refused.isEmpty, "\(refused.count) refused: \(refused.prefix(20).joined(separator: "; "))")
    }
}
