import Hummingbird
import HummingbirdCore
import Testing

@testable import HeraldAPI

/// The API key read straight from the query string must be what Hummingbird's parsed parameters give.
@Suite("API key from the query string")
struct APIKeyQueryTests {
    @Test("the first key parameter, decoded as Hummingbird decodes it, for fixed and random queries")
    func matchesHummingbird() {
        var queries = [
            "key=AIzaSyA", "alt=json&key=AIza%2DSy", "key=", "key", "keys=1&key=2", "xkey=1", "key=a&key=b", "key=%zz",
            "key=%E2%82%AC", "a=1&&key=3", "=&key=4", "k=1", "", "key=a=b", "key=%41%42", "KEY=1",
        ]
        let alphabet = Array("kKey=&%2E41zAa-_.+".utf8)
        for _ in 0..<3_000 {
            queries.append(String(decoding: (0..<Int.random(in: 0...14)).map { _ in alphabet.randomElement()! }, as: UTF8.self))
        }
        for query in queries {
            let expected = URI("/v1/accounts:sendVerificationCode?" + query).queryParameters.get("key").map { String($0) }
            #expect(ProjectResolver.queryValue(named: "key", in: query) == expected, "\(query)")
        }
    }
}
