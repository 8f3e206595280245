import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A throwaway certificate authority and a server certificate for 127.0.0.1/localhost, made once per
/// test process, so TLS peers (fake APNs) can run on loopback and Herald trusts them only through
/// `push.apns.caFile`, exactly as an operator would add a private CA.
public struct TestTLS: Sendable {
    /// PEM of the CA certificate, written to `caFile`.
    public let caPEM: String
    /// A file holding `caPEM` (for `push.apns.caFile` / CURLOPT_CAINFO).
    public let caFile: String
    let serverCertificatePEM: String
    let serverKeyPEM: String
    let clientCertificatePEM: String
    let clientKeyPEM: String

    /// The process-wide instance.
    public static let shared: TestTLS = {
        do {
            return try TestTLS.make()
        } catch {
            fatalError("cannot make the test TLS material: \(error)")
        }
    }()

    static func make() throws -> TestTLS {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Herald tests")
            CommonName("Herald test CA")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(30 * 86400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(caKey.publicKey))
            },
            issuerPrivateKey: .init(caKey))

        /// A certificate the CA signs for `usage`, with a fresh key.
        func leaf(_ commonName: String, _ usage: ExtendedKeyUsage.Usage, names: [GeneralName] = []) throws -> (Certificate, P256.Signing.PrivateKey) {
            let key = P256.Signing.PrivateKey()
            let certificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
                notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(30 * 86400),
                issuer: caName, subject: try DistinguishedName { CommonName(commonName) }, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([usage])
                    if names.isEmpty == false { SubjectAlternativeNames(names) }
                    AuthorityKeyIdentifier(keyIdentifier: try ca.extensions.subjectKeyIdentifier?.keyIdentifier)
                },
                issuerPrivateKey: .init(caKey))
            return (certificate, key)
        }
        let (server, serverKey) = try leaf(
            "localhost", .serverAuth, names: [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
        let (client, clientKey) = try leaf("herald-client", .clientAuth)

        let caPEM = try ca.serializeAsPEM().pemString
        let directory = URL(fileURLWithPath: testTLSDirectory())
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // The files (keys among them) go with the process: every `make test` left a directory behind.
        atexit { try? FileManager.default.removeItem(atPath: testTLSDirectory()) }
        let caFile = directory.appendingPathComponent("ca.pem").path
        try Data((caPEM + "\n").utf8).write(to: URL(fileURLWithPath: caFile))
        return TestTLS(
            caPEM: caPEM, caFile: caFile, serverCertificatePEM: try server.serializeAsPEM().pemString,
            serverKeyPEM: serverKey.pemRepresentation, clientCertificatePEM: try client.serializeAsPEM().pemString,
            clientKeyPEM: clientKey.pemRepresentation)
    }

    /// The server certificate and key as PEM files (for servers outside this process: aiosmtpd, RabbitMQ).
    public func serverFiles() throws -> (certificate: String, key: String) {
        try write(serverCertificatePEM, serverKeyPEM, as: "server")
    }

    /// A client certificate (CN herald-client, clientAuth) and key signed by the same CA, as PEM files.
    public func clientFiles() throws -> (certificate: String, key: String) {
        try write(clientCertificatePEM, clientKeyPEM, as: "client")
    }

    private func write(_ certificatePEM: String, _ keyPEM: String, as name: String) throws -> (certificate: String, key: String) {
        let directory = URL(fileURLWithPath: caFile).deletingLastPathComponent()
        let certificate = directory.appendingPathComponent("\(name).pem").path
        let key = directory.appendingPathComponent("\(name)-key.pem").path
        try Data((certificatePEM + "\n").utf8).write(to: URL(fileURLWithPath: certificate))
        try Data((keyPEM + "\n").utf8).write(to: URL(fileURLWithPath: key))
        return (certificate, key)
    }

    /// A server configuration offering h2 and http/1.1 by ALPN.
    public func serverConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverKeyPEM.utf8), format: .pem)))
        configuration.applicationProtocols = ["h2", "http/1.1"]
        return configuration
    }
}

/// Where this process's test TLS files live (a free function: `atexit` takes no context).
private func testTLSDirectory() -> String {
    NSTemporaryDirectory() + "herald-test-tls-\(getpid())"
}
