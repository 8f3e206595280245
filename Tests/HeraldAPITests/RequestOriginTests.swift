import HeraldCore
import Hummingbird
import HummingbirdCore
import NIOCore
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

/// The peer address read from the socket address's bytes must be the one its text names.
@Suite("Peer address from the socket address")
struct PeerAddressTests {
    @Test("IPv4, IPv6 and IPv4-mapped peers read from bytes equal their parsed text, for fixed and random addresses")
    func matchesText() throws {
        var texts = ["203.0.113.7", "0.0.0.0", "255.255.255.255", "127.0.0.1", "::1", "2001:db8::1", "::ffff:198.51.100.9", "fe80::1:2:3:4"]
        for _ in 0..<500 {
            texts.append((0..<4).map { _ in String(Int.random(in: 0...255)) }.joined(separator: "."))
            texts.append((0..<8).map { _ in String(Int.random(in: 0...0xFFFF), radix: 16) }.joined(separator: ":"))
        }
        for text in texts {
            let socket = try SocketAddress(ipAddress: text, port: 443)
            let read = try #require(IPAddress(socket), "\(text)")
            #expect(read == IPAddress(text), "\(text)")
            #expect(read == socket.ipAddress.flatMap(IPAddress.init), "\(text)")
        }
        #expect(IPAddress(try SocketAddress(unixDomainSocketPath: "/tmp/x")) == nil)
    }
}
