import Foundation

/// A PostgreSQL cluster in a temporary folder, listening on 127.0.0.1 only, at a free port, with
/// trust authentication for role `fleet`: for tests and the demo. `stop()` stops it and removes
/// the folder.
///
/// `initdb` refuses to run as root: when this process is root, the cluster's folder is given to
/// user `nobody` and `initdb`/`pg_ctl` run as `runuser -u nobody --`. The binaries come from
/// `PG_BIN`, or the newest of `/usr/lib/postgresql/{17,16,15}/bin` (Debian's `postgresql-15`).
public final class LocalPostgres: Sendable {
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    /// The folder holding the cluster, its socket and its log.
    public let directory: String
    /// The role to connect as (trust authentication, no password).
    public let username = "fleet"
    /// The database to connect to.
    public let database = "postgres"
    let bin: String
    let runAs: String?

    private init(port: Int, directory: String, bin: String, runAs: String?) {
        self.port = port
        self.directory = directory
        self.bin = bin
        self.runAs = runAs
    }

    /// Creates and starts a cluster; returns once it accepts connections.
    ///
    /// With `tls`, the server has `ssl = on` with that certificate, and its pg_hba.conf admits TCP
    /// connections over TLS only (`hostssl`; `local` stays trust for `sql(_:)`).
    public static func start(tls: TestCertificates? = nil) throws -> LocalPostgres {
        let bin = try Self.findBinaries()
        var template = Array("/tmp/serial-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw LocalPostgresError.failed("mkdtemp", "errno \(errno)") }
        let directory = String(cString: made)
        let runAs: String? = geteuid() == 0 ? "nobody" : nil
        if let runAs { try Self.run(["/bin/chown", runAs, directory], as: nil, "chown") }
        let postgres = LocalPostgres(port: try freePort(), directory: directory, bin: bin, runAs: runAs)
        do {
            try Self.run(
                ["\(bin)/initdb", "-D", "\(directory)/data", "-U", postgres.username, "-A", "trust", "-E", "UTF8",
                 "--no-sync"], as: runAs, "initdb")
            if let tls { try postgres.requireTLS(tls) }
            try postgres.pgCtl(["-o", "-h 127.0.0.1 -p \(postgres.port) -k \(directory) -F", "-l", "\(directory)/log",
                                "start"])
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        return postgres
    }

    /// Stops the cluster (`immediate`: at once, as a crash would, dropping connections) and,
    /// unless `keepFolder`, removes its folder.
    public func stop(immediate: Bool = false, keepFolder: Bool = false) throws {
        try self.pgCtl(["-m", immediate ? "immediate" : "fast", "stop"])
        if !keepFolder { try? FileManager.default.removeItem(atPath: self.directory) }
    }

    /// Starts a cluster stopped with `keepFolder`, on the same port.
    public func restart() throws {
        try self.pgCtl(["-o", "-h 127.0.0.1 -p \(self.port) -k \(self.directory) -F", "-l", "\(self.directory)/log",
                        "start"])
    }

    /// Runs `statement` with psql over the cluster's Unix socket; its output, unaligned, tuples only.
    public func sql(_ statement: String) throws -> String {
        let log = "/tmp/serial-pg-sql-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(log) }
        let arguments = ["\(self.bin)/psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.directory,
                         "-p", "\(self.port)", "-U", self.username, "-d", self.database, "-c", statement]
        let child = try ChildProcess(self.runAs.map { ["/usr/sbin/runuser", "-u", $0, "--"] + arguments } ?? arguments,
                                     outputPath: log)
        guard child.wait() == 0 else { throw LocalPostgresError.failed("psql", child.output) }
        return child.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Installs `tls`'s server certificate and key in the data folder, turns `ssl` on, and lets
    /// TCP connections in over TLS only.
    private func requireTLS(_ tls: TestCertificates) throws {
        let data = "\(self.directory)/data"
        for (source, name) in [(tls.serverCertificate, "server.crt"), (tls.serverKey, "server.key")] {
            try FileManager.default.copyItem(atPath: source, toPath: "\(data)/\(name)")
            if let runAs { try Self.run(["/bin/chown", runAs, "\(data)/\(name)"], as: nil, "chown") }
            chmod("\(data)/\(name)", 0o600)  // PostgreSQL refuses a key others can read
        }
        let settings = "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
        let configuration = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(data)/postgresql.conf"))
        try configuration.seekToEnd()
        try configuration.write(contentsOf: Data(settings.utf8))
        try configuration.close()
        let hba = "local all all trust\nhostssl all all 127.0.0.1/32 trust\n"  // no `host` line: no plain TCP
        try hba.write(toFile: "\(data)/pg_hba.conf", atomically: false, encoding: .utf8)
    }

    private func pgCtl(_ arguments: [String]) throws {
        try Self.run(["\(self.bin)/pg_ctl", "-D", "\(self.directory)/data", "-w", "-t", "30"] + arguments,
                     as: self.runAs, "pg_ctl \(arguments.last ?? "")")
    }

    static func findBinaries() throws -> String {
        if let bin = ProcessInfo.processInfo.environment["PG_BIN"] { return bin }
        for version in [17, 16, 15] where FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(version)/bin/initdb") {
            return "/usr/lib/postgresql/\(version)/bin"
        }
        throw LocalPostgresError.notInstalled
    }

    /// Runs a command to its end (bounded by the command's own timeouts), as `user` if given.
    static func run(_ arguments: [String], as user: String?, _ what: String) throws {
        let command = user.map { ["/usr/sbin/runuser", "-u", $0, "--"] + arguments } ?? arguments
        let log = "/tmp/serial-pg-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(log) }
        let child = try ChildProcess(command, outputPath: log)
        guard child.wait() == 0 else { throw LocalPostgresError.failed(what, child.output) }
    }
}

/// Why a `LocalPostgres` could not be started or stopped.
public enum LocalPostgresError: Error, CustomStringConvertible {
    /// No PostgreSQL binaries: install them (`apt-get install -y postgresql-15`) or set `PG_BIN`.
    case notInstalled
    /// A step failed, with its output.
    case failed(String, String)

    public var description: String {
        switch self {
        case .notInstalled:
            return "PostgreSQL is not installed: apt-get install -y postgresql-15 (or set PG_BIN to its bin folder)"
        case .failed(let what, let output): return "\(what) failed: \(output)"
        }
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice).
public func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LocalPostgresError.failed("socket", "errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
        }
    }
    guard bound else { throw LocalPostgresError.failed("bind", "errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
