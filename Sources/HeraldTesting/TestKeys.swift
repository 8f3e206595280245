import Crypto
import CryptoExtras
import Foundation

/// RSA keys made once per test process and shared by every test that needs one.
///
/// A 2048-bit RSA key takes seconds to generate in a debug build (BoringSSL is unoptimised there). Each
/// in-process API, each fake Apple and each herald-api a test started made their own, on the two
/// cooperative threads of the test process or on the machine's two cores: the suite's in-process
/// servers and timers then stalled for 10 to 40 seconds at a time, long enough for waits to give up.
public enum TestKeys {
    /// herald-api's ID-token signing key (PEM), as `tokens.signingKeyFile` would hold it.
    public static let idTokenSigningKeyPEM: String = {
        // Force-unwrapped: generating a key only fails if the machine has no randomness.
        try! _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation + "\n"
    }()

    /// A file holding `idTokenSigningKeyPEM` (mode 0600), for the herald-api processes tests start.
    public static let idTokenSigningKeyFile: String = {
        let path = NSTemporaryDirectory() + "herald-test-id-token-key-\(getpid()).pem"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        precondition(fd >= 0, "cannot write \(path)")
        _ = idTokenSigningKeyPEM.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        atexit { _ = TestKeys.idTokenSigningKeyFile.withCString { unlink($0) } }
        return path
    }()

    /// The fake Apple's identity-token keys `k1`, `k2` and `k3`.
    static let appleIdentityKeys: [String: _RSA.Signing.PrivateKey] = {
        var keys: [String: _RSA.Signing.PrivateKey] = [:]
        for kid in ["k1", "k2", "k3"] { keys[kid] = try! _RSA.Signing.PrivateKey(keySize: .bits2048) }
        return keys
    }()
}
