import Glibc
import Synchronization

/// Busy-loop threads, one per core by default, that keep every core busy while a row runs: the
/// loaded rows measure hand-offs when no core is idle (the scheduler must preempt to wake a thread).
final class Hogs: @unchecked Sendable {  // `threads` is written only by init and end, on one thread
    private let stopping = Atomic<Bool>(false)
    private var threads: [pthread_t] = []

    init(count: Int) {
        for _ in 0..<count {
            let body = Unmanaged.passRetained(HogBody { [self] in
                var spins = 0
                while !self.stopping.load(ordering: .relaxed) { spins &+= 1 }
                _ = spins
            }).toOpaque()
            var handle = pthread_t()
            let rc = pthread_create(&handle, nil, { argument in
                Unmanaged<HogBody>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            }, body)
            precondition(rc == 0, "pthread_create failed with error \(rc)")
            self.threads.append(handle)
        }
    }

    /// Stops the hogs and joins them.
    func end() {
        self.stopping.store(true, ordering: .relaxed)
        for thread in self.threads { pthread_join(thread, nil) }
        self.threads = []
    }
}

private final class HogBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// The process's resident set size in bytes (`/proc/self/statm`, second field).
func residentBytes() -> Int {
    guard let text = readTextFile("/proc/self/statm") else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Runs this executable again with `arguments` and returns what it printed on stdout: for a
/// measurement that needs a fresh process (an RSS not lowered by memory earlier rows freed).
func runChildProcess(_ arguments: [String]) -> String? {
    var pipeEnds: [Int32] = [0, 0]
    guard pipe(&pipeEnds) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
    let argv = (["/proc/self/exe"] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var child = pid_t()
    let rc = posix_spawn(&child, "/proc/self/exe", &actions, nil, argv, environ)
    close(pipeEnds[1])
    guard rc == 0 else {
        close(pipeEnds[0])
        return nil
    }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    close(pipeEnds[0])
    var status: Int32 = 0
    waitpid(child, &status, 0)
    return String(decoding: bytes, as: UTF8.self)
}
