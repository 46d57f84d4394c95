import Glibc
import SerialCore
import SerialRequests
import Synchronization

/// A minimal HTTP/1.1 server on 127.0.0.1 (an ephemeral port), one connection at a time on its
/// own pthread: `GET /token` issues a new bearer token, `GET /expire` invalidates the current one,
/// any other path answers 200 with the current token or 401 otherwise. `Connection: close` always.
final class LoopbackHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let thread: LockedValue<pthread_t?> = LockedValue(nil)
    private let state = LockedValue<(valid: String, issued: Int, served: Int)>(("t0", 0, 0))

    init?() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            return nil
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = UInt16(bigEndian: address.sin_port)
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            Unmanaged<LoopbackHTTPServer>.fromOpaque(argument!).takeRetainedValue().acceptLoop()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        self.thread.withLock { $0 = thread }
    }

    var tokensIssued: Int { self.state.withLock { $0.issued } }
    var requestsServed: Int { self.state.withLock { $0.served } }

    /// Stops accepting and joins the server thread.
    func stop() {
        Glibc.shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
        if let thread = self.thread.withLock({ $0 }) { pthread_join(thread, nil) }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(self.listener, nil, nil)
            if connection < 0 { return }
            setTimeouts(connection)
            self.answer(connection)
            close(connection)
        }
    }

    private func answer(_ connection: Int32) {
        let request = readAll(connection, until: "\r\n\r\n")
        let lines = request.split(separator: "\r\n", omittingEmptySubsequences: false)
        let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let bearer = lines.first { $0.lowercased().hasPrefix("authorization: bearer ") }
            .map { String($0.dropFirst(22)) }
        let (status, body): (Int, String) = self.state.withLock { state in
            state.served += 1
            switch path {
            case "/token":
                state.issued += 1
                state.valid = "t\(state.issued)"
                return (200, state.valid)
            case "/expire":
                state.valid = "expired"
                return (200, "")
            default:
                return bearer == state.valid ? (200, "ok \(path)") : (401, "token expired")
            }
        }
        writeAll(
            connection,
            "HTTP/1.1 \(status) X\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
    }
}

/// A transport that sends `GET path` with `Authorization: Bearer <credential>` over a fresh
/// loopback connection, on one of four worker queues (the scheduler itself never blocks).
final class LoopbackHTTPTransport: RequestTransport, Sendable {
    typealias Request = String
    typealias Response = HTTPReply
    typealias Credential = String

    struct HTTPReply: Sendable {
        var status: Int
        var body: String
    }

    struct ConnectionFailed: Error {
        var step: String
    }

    let port: UInt16
    let workers = (0..<4).map { SerialQueue(label: "http-\($0)") }
    private let counter = Atomic<Int>(0)

    init(port: UInt16) {
        self.port = port
    }

    func send(
        _ path: String, credential: String, completion: @escaping @Sendable (Result<HTTPReply, any Error>) -> Void
    ) {
        let worker = self.workers[self.counter.add(1, ordering: .relaxed).newValue % self.workers.count]
        worker.async { completion(self.get(path, bearer: credential)) }
    }

    /// Fetches a new token from `/token`, on a worker.
    func fetchToken(_ completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
        self.workers[0].async {
            completion(self.get("/token", bearer: nil).map(\.body))
        }
    }

    /// A blocking GET; every socket call is bounded by 5 s timeouts.
    func get(_ path: String, bearer: String?) -> Result<HTTPReply, any Error> {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .failure(ConnectionFailed(step: "socket")) }
        defer { close(fd) }
        setTimeouts(fd)
        var address = loopbackAddress(port: self.port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return .failure(ConnectionFailed(step: "connect")) }
        let authorization = bearer.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        writeAll(fd, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(authorization)Connection: close\r\n\r\n")
        let response = readAll(fd, until: nil)
        guard let head = response.split(separator: "\r\n", maxSplits: 1).first,
            let status = head.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return .failure(ConnectionFailed(step: "parse: \(response.prefix(40))")) }
        let body = response.firstRange(of: "\r\n\r\n").map { String(response[$0.upperBound...]) } ?? ""
        return .success(HTTPReply(status: status, body: body))
    }
}

private func loopbackAddress(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
}

private func setTimeouts(_ fd: Int32) {
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
}

private func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if written <= 0 { return }
        offset += written
    }
}

/// Reads until `marker` appears (or, with `nil`, until the peer closes), at most 64 KiB.
private func readAll(_ fd: Int32, until marker: String?) -> String {
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while data.count < 65_536 {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if count <= 0 { break }
        data.append(contentsOf: buffer[0..<count])
        if let marker, String(decoding: data, as: UTF8.self).contains(marker) { break }
    }
    return String(decoding: data, as: UTF8.self)
}
