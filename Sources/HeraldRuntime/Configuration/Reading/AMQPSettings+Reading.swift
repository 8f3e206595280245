import HeraldAMQP
import HeraldCore

extension AMQPSettings {
    /// `amqp`.
    init(reader amqp: ConfigReader) throws {
        let urls = try amqp.stringList("url", default: ["amqp://guest:guest@127.0.0.1:5672/%2f"])
        guard urls.isEmpty == false else { throw amqp.fail("url", "needs at least one broker URL") }
        var endpoints: [AMQPEndpoint] = []
        for (index, url) in urls.enumerated() {
            guard let endpoint = AMQPEndpoint(url: url) else {
                throw amqp.fail(
                    urls.count == 1 ? "url" : "url[\(index)]",
                    "must be an amqp://user:password@host:port/vhost or amqps://… URL (without a ?query: heartbeat and TLS are amqp.heartbeat and amqp.tls)"
                )
            }
            endpoints.append(endpoint)
        }
        let tls = try TLS(reader: try amqp.section("tls"))
        if endpoints.contains(where: \.tls) == false, tls.caFile != nil || tls.certFile != nil {
            throw amqp.fail("tls", "applies to amqps:// URLs only")
        }
        let exchange = try amqp.string("exchange", default: "herald")
        guard exchange.isEmpty == false, exchange.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            throw amqp.fail("exchange", "must be letters, digits, '.', '_' or '-' (got '\(exchange)')")
        }
        self.init(
            endpoints: endpoints, tls: tls, passwordFile: try amqp.optionalString("passwordFile"), exchange: exchange,
            queueType: try amqp.choice("queueType", ["quorum", "classic"], default: "quorum"),
            prefetch: try amqp.int("prefetch", default: 32, in: 1...2000),
            heartbeat: try amqp.duration("heartbeat", default: .seconds(30), in: .zero ... .seconds(600)),
            deliveryLimit: try amqp.int("deliveryLimit", default: 10, in: 1...1000),
            publishTimeout: try amqp.duration("publishTimeout", default: .seconds(5), in: .milliseconds(100) ... .seconds(60)),
            connectTimeout: try amqp.duration("connectTimeout", default: .seconds(5), in: .milliseconds(100) ... .seconds(60)),
            managementURL: try amqp.optionalString("managementUrl"))
        if let url = managementURL, url.hasPrefix("http://") == false && url.hasPrefix("https://") == false {
            throw amqp.fail("managementUrl", "must be an http:// or https:// URL such as http://127.0.0.1:15672")
        }
        try amqp.finish()
    }
}

extension AMQPSettings.TLS {
    /// `amqp.tls`.
    init(reader tls: ConfigReader) throws {
        self.init(
            caFile: try tls.optionalString("caFile"), certFile: try tls.optionalString("certFile"),
            keyFile: try tls.optionalString("keyFile"), verifyPeer: try tls.bool("verifyPeer", default: true))
        guard (certFile == nil) == (keyFile == nil) else {
            throw tls.fail(certFile == nil ? "certFile" : "keyFile", "a client certificate needs both certFile and keyFile")
        }
        try tls.finish()
    }
}
