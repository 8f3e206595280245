import HeraldCore
import Testing

@Suite("Server URLs (amqp.url, store.url) parsed without Foundation's URL")
struct ServerURLTests {
    @Test("every part: user and password percent-decoded once, IPv6 brackets dropped, query items in order")
    func parts() throws {
        let url = try #require(ServerURL("POSTGRES://her%40ld:p%2541ss%2Fw@[2001:db8::1]:6432/my%20db?sslmode=verify-full&schema=eu1&flag#frag"))
        #expect(url.scheme == "postgres")
        #expect(url.user == "her@ld")
        #expect(url.password == "p%41ss/w")
        #expect(url.host == "2001:db8::1")
        #expect(url.port == 6432)
        #expect(url.percentEncodedPath == "/my%20db")
        #expect(url.queryItems.map(\.name) == ["sslmode", "schema", "flag"])
        #expect(url.queryItems.map(\.value) == ["verify-full", "eu1", nil])

        let bare = try #require(ServerURL("amqp://broker"))
        #expect(bare.user == nil && bare.password == nil && bare.port == nil && bare.percentEncodedPath.isEmpty)
        #expect(ServerURL("amqp://u@h:/")?.port == nil)
        #expect(ServerURL("amqp://u:@h")?.password == "")
        // The last @ ends the user information, so an unencoded @ in a password still works.
        #expect(ServerURL("amqp://u:p@ss@h")?.password == "p@ss")
    }

    @Test(
        "malformed URLs are refused",
        arguments: [
            "broker:5672", "://h", "1amqp://h", "amqp://", "amqp://u:p@", "amqp://h:99999", "amqp://h:5a72", "amqp://h:-1",
            "amqp://[::1", "amqp://[::1]x", "amqp://h/a b", "amqp://u:p%zz@h", "amqp://u:p%4@h",
            "amqp://h/é",
        ])
    func refused(_ text: String) {
        #expect(ServerURL(text) == nil)
    }
}
