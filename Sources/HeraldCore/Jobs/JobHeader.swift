/// The AMQP headers Herald writes on a job and reads back, by name (`deploy/asyncapi.yaml` is the
/// contract): one place, so a publisher, a worker and herald-admin cannot spell one differently.
public enum JobHeader {
    /// The body's schema version (`Job.schemaVersion`); a worker refuses other versions.
    public static let schema = "x-herald-schema"
    /// How many delivery attempts came before this one (0 for a first publish or a replay).
    public static let attempt = "x-herald-attempt"
    /// How often per-number spacing parked the job in a throttle queue.
    public static let throttled = "x-herald-throttled"
    /// The spacing slot (µs since 1970) reserved for the job before it was parked.
    public static let notBefore = "x-herald-not-before"
    /// Why a dead-lettered job failed.
    public static let reason = "x-herald-reason"
    /// When a dead-lettered job failed (RFC 3339).
    public static let failedAt = "x-herald-failed-at"
    /// The foreign producer that published the job (`integrations.producers`).
    public static let producer = "x-herald-producer"
    /// A foreign producer's `sha256=<hex HMAC-SHA256>` of the body.
    public static let signature = "x-herald-signature"
}
