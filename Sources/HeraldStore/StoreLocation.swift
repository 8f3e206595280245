import HeraldCore

/// Where the shared store lives, parsed from `store.url`.
///
/// - `sqlite:<path>`: one file, every process on one machine.
/// - `postgres://user:password@host:port/database?sslmode=…&schema=…` (also `postgresql://`): every
///   process on every host. Percent-encoding in user and password is decoded.
public enum StoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(PostgresLocation)

    public struct PostgresLocation: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var user: String
        public var password: String?
        public var database: String
        public var sslMode: SSLMode
        /// Tables live in this schema (created by the migrations) instead of `public`: several Herald
        /// deployments, or test runs, can share one database.
        public var schema: String?

        public init(host: String, port: Int, user: String, password: String?, database: String, sslMode: SSLMode, schema: String?) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
            self.database = database
            self.sslMode = sslMode
            self.schema = schema
        }

        /// libpq's `sslmode` values, with libpq's meaning.
        public enum SSLMode: String, Sendable, CaseIterable {
            /// Plain TCP.
            case disable
            /// TLS when the server offers it; the certificate is checked only against `store.tls.caFile`.
            case prefer
            /// TLS or no connection; the certificate is checked only against `store.tls.caFile`.
            case require
            /// TLS, certificate chain checked (against `store.tls.caFile` or the system's roots), any host name.
            case verifyCA = "verify-ca"
            /// TLS, certificate chain and host name checked.
            case verifyFull = "verify-full"
        }

        /// The URL with the password replaced, for logs and `herald-admin store status`.
        public var redacted: String {
            let credentials = password == nil ? user : "\(user):***"
            let query = [sslMode == .prefer ? nil : "sslmode=\(sslMode.rawValue)", schema.map { "schema=\($0)" }].compactMap { $0 }
            let host = self.host.contains(":") ? "[\(self.host)]" : self.host
            return "postgres://\(credentials)@\(host):\(port)/\(database)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        }
    }

    /// Parses `text`; the error says what is wrong without repeating a password.
    public init(parsing text: String) throws(StoreLocationError) {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard path.isEmpty == false else { throw StoreLocationError("sqlite: needs a path (sqlite:/var/lib/herald/herald.sqlite)") }
            self = .sqlite(path: path)
            return
        }
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else {
            throw StoreLocationError("must be sqlite:<path> or postgres://user:password@host:port/database")
        }
        guard let url = ServerURL(text) else {
            throw StoreLocationError("is not a valid postgres:// URL (percent-encode special characters in the password)")
        }
        guard let user = url.user, user.isEmpty == false else {
            throw StoreLocationError("needs a user: postgres://user:password@host:port/database")
        }
        let encodedDatabase = url.percentEncodedPath.drop(while: { $0 == "/" })
        guard encodedDatabase.isEmpty == false, encodedDatabase.contains("/") == false,
            let database = ServerURL.percentDecoded(encodedDatabase)
        else {
            throw StoreLocationError("needs a database name after the host: postgres://user:password@host:port/database")
        }
        var sslMode = PostgresLocation.SSLMode.prefer
        var schema: String?
        for item in url.queryItems {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = PostgresLocation.SSLMode(rawValue: value) else {
                    let known = PostgresLocation.SSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw StoreLocationError("sslmode must be one of \(known)")
                }
                sslMode = mode
            case "schema":
                guard let value = item.value, Self.isIdentifier(value) else {
                    throw StoreLocationError("schema must be a lower-case identifier (letters, digits, _)")
                }
                schema = value
            default:
                throw StoreLocationError("does not know the parameter '\(item.name)' (known: sslmode, schema)")
            }
        }
        self = .postgres(
            PostgresLocation(
                host: url.host, port: url.port ?? 5432, user: user, password: url.password, database: database,
                sslMode: sslMode, schema: schema))
    }

    public static func isIdentifier(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, text.count <= 63, ("a"..."z").contains(first) || first == "_" else { return false }
        return text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// For logs: the SQLite path, or the PostgreSQL URL without its password.
    public var redacted: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let location): location.redacted
        }
    }
}

/// Why a `store.url` is not usable.
public struct StoreLocationError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
