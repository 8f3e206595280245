/// `ledger`: the delivery ledger operators read (`/admin/v1/messages`, `herald-admin messages`).
public struct LedgerSettings: Sendable {
    /// How long a message's row is kept after its last change; herald-api's housekeeping deletes
    /// older rows once a minute, in chunks, never in a request.
    public var retention: Duration

    public init(retention: Duration = .seconds(30 * 86_400)) { self.retention = retention }
}
