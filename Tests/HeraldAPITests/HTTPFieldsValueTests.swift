import HTTPTypes
import Testing

@testable import HeraldAPI

@Suite("Request header values")
struct HTTPFieldsValueTests {
    /// `value(_:)` answers as the subscript does (absent, once, repeated, any letter case, cookies joined
    /// with "; "), for random header sets.
    @Test("a header's value is the subscript's, for headers absent, present once and repeated")
    func sameAsSubscript() {
        let names: [HTTPField.Name] = [.contentType, HTTPField.Name("traceparent")!, .authorization, .cookie, .xFirebaseLocale, .origin]
        let spellings = ["Content-Type", "content-type", "TraceParent", "authorization", "Cookie", "X-Firebase-Locale", "origin", "X-Other"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var headers = HTTPFields()
            for index in 0..<Int.random(in: 0...6, using: &generator) {
                let spelling = spellings.randomElement(using: &generator)!
                headers.append(HTTPField(name: HTTPField.Name(spelling)!, value: "v\(index)"))
            }
            for name in names { #expect(headers.value(name) == headers[name], "\(name) in \(headers)") }
        }
        var repeated = HTTPFields()
        repeated.append(HTTPField(name: .xFirebaseLocale, value: "de"))
        repeated.append(HTTPField(name: .contentType, value: "application/json"))
        repeated.append(HTTPField(name: .xFirebaseLocale, value: "fr"))
        #expect(repeated.value(.xFirebaseLocale) == "de, fr")
        #expect(repeated.value(.contentType) == "application/json")
        #expect(repeated.value(HTTPField.Name("traceparent")!) == nil)
    }
}
