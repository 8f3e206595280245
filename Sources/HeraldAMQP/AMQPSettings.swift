/// `amqp`: the broker.
public struct AMQPSettings: Sendable {
    /// The nodes of the broker (`amqp.url`: one URL or a list), tried in order on every (re)connect.
    /// Passwords from `passwordFile` are already in them once `ConfigurationLoader` has loaded the file.
    public var endpoints: [AMQPEndpoint]
    /// For `amqps://` nodes.
    public var tls: TLS
    /// A file holding the broker password (instead of the URLs'), e.g. a mounted Kubernetes Secret.
    public var passwordFile: String?
    /// Exchange name; queue names derive from it (`<exchange>.sms`, `<exchange>.sms.dead`, …).
    public var exchange: String
    /// `quorum` (default) or `classic` work queues.
    public var queueType: String
    /// Unacknowledged deliveries per worker connection.
    public var prefetch: Int
    /// Heartbeat interval negotiated with the broker.
    public var heartbeat: Duration
    /// Deliveries of one message before the broker dead-letters it as poison (`x-delivery-limit`).
    public var deliveryLimit: Int
    /// How long the API waits for a publisher confirm before answering 503.
    public var publishTimeout: Duration
    /// TCP connect and login timeout.
    public var connectTimeout: Duration
    /// RabbitMQ's management API (`http://host:15672`), asked with the first node's credentials for what
    /// AMQP does not report (unacknowledged messages); nil: not asked.
    public var managementURL: String? = nil

    /// `amqp.tls`: how `amqps://` connections check the broker and prove themselves.
    public struct TLS: Sendable, Equatable {
        /// CA (PEM) that signed the brokers' certificates; nil = the system's roots.
        public var caFile: String?
        /// Client certificate and key (PEM) for brokers that require one (`fail_if_no_peer_cert`).
        public var certFile: String?
        public var keyFile: String?
        /// Check the broker's certificate and host name (default true; false only for a lab).
        public var verifyPeer: Bool

        public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil, verifyPeer: Bool = true) {
            self.caFile = caFile
            self.certFile = certFile
            self.keyFile = keyFile
            self.verifyPeer = verifyPeer
        }
    }

    public init(
        endpoints: [AMQPEndpoint], tls: TLS, passwordFile: String?, exchange: String, queueType: String, prefetch: Int, heartbeat: Duration,
        deliveryLimit: Int, publishTimeout: Duration, connectTimeout: Duration, managementURL: String? = nil
    ) {
        self.endpoints = endpoints
        self.tls = tls
        self.passwordFile = passwordFile
        self.exchange = exchange
        self.queueType = queueType
        self.prefetch = prefetch
        self.heartbeat = heartbeat
        self.deliveryLimit = deliveryLimit
        self.publishTimeout = publishTimeout
        self.connectTimeout = connectTimeout
        self.managementURL = managementURL
    }
}
