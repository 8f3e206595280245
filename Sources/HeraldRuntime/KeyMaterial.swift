import Foundation
import HeraldCore

/// Secrets that are generated once into `state.dir` when configuration does not provide them.
///
/// Generation is race-free (`O_EXCL`): when the API and a worker start together, one writes the file
/// and the other reads it. Files are created 0600.
public enum KeyMaterial {
    /// `codes.sealingKey`, or the one kept in `<state.dir>/sealing.key` (created on first use).
    public static func sealingKey(_ configuration: HeraldConfiguration) throws -> Data {
        if let configured = configuration.codes.sealingKey { return configured }
        let path = configuration.state.dir + "/sealing.key"
        let text = try readOrCreate(path: path) { SecureRandom.bytes(32).base64Encoded + "\n" }
        guard let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32 else {
            throw ConfigError(key: "codes.sealingKey", problem: "the generated key in \(path) is damaged; delete it or set codes.sealingKey")
        }
        return key
    }

    /// The ID-token signing key: `tokens.signingKeyFile`, or the one kept in `<state.dir>/id-token-key.pem`
    /// (created on first use with `generate`).
    public static func idTokenSigningKey(_ configuration: HeraldConfiguration, generate: () throws -> String) throws -> String {
        if let file = configuration.tokens.signingKeyFile {
            guard let data = FileManager.default.contents(atPath: file), data.isEmpty == false else {
                throw ConfigError(key: "tokens.signingKeyFile", problem: "cannot read \(file)")
            }
            return String(decoding: data, as: UTF8.self)
        }
        return try readOrCreate(path: configuration.state.dir + "/id-token-key.pem", make: generate)
    }

    /// The content of `path`, creating it with `make()` first if it does not exist.
    public static func readOrCreate(path: String, make: () throws -> String) throws -> String {
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if fd >= 0 {
            let content = try make()
            let written = content.withCString { write(fd, $0, strlen($0)) }
            fsync(fd)
            close(fd)
            guard written == content.utf8.count else {
                unlink(path)
                throw ConfigError(key: "state.dir", problem: "cannot write \(path)")
            }
            return content
        }
        guard errno == EEXIST else {
            throw ConfigError(key: "state.dir", problem: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        // Another process may be writing it right now: wait for content.
        for _ in 0..<100 {
            if let data = FileManager.default.contents(atPath: path), data.isEmpty == false {
                return String(decoding: data, as: UTF8.self)
            }
            usleep(20_000)
        }
        throw ConfigError(key: "state.dir", problem: "\(path) exists but stays empty")
    }
}

extension Array where Element == UInt8 {
    var base64Encoded: String { Data(self).base64EncodedString() }
}
