import SerialRuntime

// Stand-ins for the user's own code that the README and doc examples call: a database, a
// network API, an auth service, a button. They exist so the examples compile as written.

struct Row: Sendable {}

func fetchRows() throws -> [Row] { [Row()] }

func flush() {}

func ping(_ host: String) throws -> String { "pong from \(host)" }

/// A user's network API: a `RequestTransport` for `RequestQueue`, and a job-progress call for
/// `Poller`.
struct API: RequestTransport {
    enum Request: Sendable { case profile, feed }
    struct Response: Sendable { var status: Int }
    typealias Credential = String

    func send(_ request: Request, credential: String, completion: @escaping @Sendable (Result<Response, any Error>) -> Void) {
        completion(.success(Response(status: 200)))
    }

    func jobProgress(_ id: String, completion: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        completion(.success(100))
    }

    func fetchProfile() async throws -> Response {
        Response(status: 200)
    }
}

struct Auth: Sendable {
    func refresh(_ expired: String, completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
        completion(.success(expired + "+"))
    }
}

final class ResendButton: Sendable {
    func enable() {}
    func show(_ remaining: Duration) {}
}

func fetchStatus(_ host: String) throws -> String { "\(host): up" }

struct JobStatus: Sendable, Equatable {
    var percent: Int
}

struct JobClient: Sendable {
    func fetchStatus(_ id: String, completion: @escaping @Sendable (Result<JobStatus, any Error>) -> Void) {
        completion(.success(JobStatus(percent: 100)))
    }
}

func render(_ status: JobStatus) {}

/// A user's connection and the calls a heartbeat example makes on it.
struct Connection: Sendable {}

let connection = Connection()

func close(_ connection: Connection) {}

func sendHeartbeat() {}

/// A user's own context: the id of the request being handled.
enum RequestID {
    @TaskLocal static var current: String?
}
