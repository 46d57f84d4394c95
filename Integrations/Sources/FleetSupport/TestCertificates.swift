import Foundation

/// Certificates made for a test by openssl in a temporary folder, never committed: a certificate
/// authority, a server certificate it issued for the name `localhost` only
/// (no IP address: a client must ask for that name, `serverName`, to verify it), and a second,
/// unrelated authority (a wrong trust root). EC P-256 keys, valid for a day. `remove()` deletes them.
public struct TestCertificates: Sendable {
    /// The folder holding them.
    public let directory: String
    /// The authority that issued the server's certificate (PEM): the right trust root.
    public var authority: String { "\(self.directory)/ca.crt" }
    /// An authority that issued nothing here (PEM): a wrong trust root.
    public var otherAuthority: String { "\(self.directory)/other-ca.crt" }
    /// The server's certificate (PEM), for the DNS name localhost.
    public var serverCertificate: String { "\(self.directory)/server.crt" }
    /// The server's private key (PEM).
    public var serverKey: String { "\(self.directory)/server.key" }

    /// Makes them with `openssl` (Debian's package, which postgresql-15 brings).
    public static func make() throws -> TestCertificates {
        var template = Array("/tmp/serial-tls-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw LocalPostgresError.failed("mkdtemp", "errno \(errno)") }
        let certificates = TestCertificates(directory: String(cString: made))
        let d = certificates.directory
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        do {
            for name in ["ca", "other-ca"] {
                try Self.openssl(["req", "-x509"] + key + ["-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).crt",
                                  "-days", "1", "-subj", "/CN=serial-runtime test \(name)"])
            }
            try Self.openssl(["req"] + key + ["-keyout", "\(d)/server.key", "-out", "\(d)/server.csr",
                              "-subj", "/CN=localhost"])
            try "subjectAltName = DNS:localhost\n".write(
                toFile: "\(d)/server.ext", atomically: false, encoding: .utf8)
            try Self.openssl(["x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key",
                              "-CAcreateserial", "-days", "1", "-extfile", "\(d)/server.ext", "-out", "\(d)/server.crt"])
        } catch {
            certificates.remove()
            throw error
        }
        return certificates
    }

    /// Deletes the folder and everything in it.
    public func remove() { try? FileManager.default.removeItem(atPath: self.directory) }

    private static func openssl(_ arguments: [String]) throws {
        try LocalPostgres.run(["/usr/bin/openssl"] + arguments, as: nil, "openssl \(arguments[0])")
    }
}
