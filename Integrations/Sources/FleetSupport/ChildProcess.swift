import Foundation

/// A child process started with `posix_spawn`, its output (standard output and error) going to a
/// file, waited for with `waitpid`: Foundation's `Process.waitUntilExit` may wait for ever on
/// Linux when called from async code, and a pipe stays open as long as any grandchild (a server
/// started by `pg_ctl`) holds it.
final class ChildProcess: @unchecked Sendable {  // `status` is written only by the thread that waits
    let pid: pid_t
    let outputPath: String
    private(set) var status: Int32? = nil

    /// Starts `arguments[0]` (an absolute path) with the rest as arguments.
    init(_ arguments: [String], outputPath: String) throws {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fileActions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&fileActions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, arguments[0], &fileActions, nil, argv, environ)
        guard rc == 0 else { throw ChildProcessError.spawnFailed(arguments[0], errno: rc) }
        self.pid = pid
        self.outputPath = outputPath
    }

    /// Its exit status once it has ended (a signal `n` gives `128 + n`), without waiting.
    func poll() -> Int32? {
        if let status = self.status { return status }
        var raw: Int32 = 0
        guard waitpid(self.pid, &raw, WNOHANG) == self.pid else { return nil }
        self.status = Self.decode(raw)
        return self.status
    }

    /// Waits for it to end; its exit status.
    func wait() -> Int32 {
        if let status = self.status { return status }
        var raw: Int32 = 0
        while waitpid(self.pid, &raw, 0) == -1 && errno == EINTR {}
        self.status = Self.decode(raw)
        return self.status!
    }

    /// Sends SIGKILL.
    func killNow() {
        kill(self.pid, SIGKILL)
    }

    /// What it printed.
    var output: String { (try? String(contentsOfFile: self.outputPath, encoding: .utf8)) ?? "" }

    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}

enum ChildProcessError: Error, CustomStringConvertible {
    case spawnFailed(String, errno: Int32)
    var description: String {
        switch self {
        case .spawnFailed(let path, let errno): return "could not start \(path): \(String(cString: strerror(errno)))"
        }
    }
}
