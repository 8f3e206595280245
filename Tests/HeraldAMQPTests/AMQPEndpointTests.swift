import HeraldAMQP
import Testing

@Suite("AMQP endpoints parsed from amqp.url")
struct AMQPEndpointTests {
    @Test("AMQP endpoints: defaults, TLS port, vhost decoding, no query")
    func amqp() throws {
        let plain = try #require(AMQPEndpoint(url: "amqp://h"))
        #expect(plain == AMQPEndpoint(url: "amqp://guest:guest@h:5672/"))
        #expect(plain.virtualHost == "/" && plain.port == 5672 && plain.tls == false)
        let tls = try #require(AMQPEndpoint(url: "amqps://herald:s%3Acret@[::1]/%2fprod"))
        #expect(tls.port == 5671 && tls.tls && tls.host == "::1" && tls.password == "s:cret" && tls.virtualHost == "/prod")
        #expect(tls.redacted == "amqps://herald:***@[::1]:5671/%2fprod")
        #expect(AMQPEndpoint(url: "http://h") == nil)
        #expect(AMQPEndpoint(url: "amqp://h/v?heartbeat=10") == nil)
        #expect(AMQPEndpoint(url: "amqp://h/%ff%fe") == nil, "a vhost that is not UTF-8")
    }
}
