import Glibc
import SerialCore
import Synchronization

/// Starts `count` plain pthreads running `body(index)`, released together at a barrier so they
/// really contend, and joins them all before returning.
public func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let barrier = Barrier(parties: count)
    var threads: [pthread_t] = []
    for index in 0..<count {
        let box = Unmanaged.passRetained(ThreadBody { barrier.arriveAndWait(); body(index) }).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
}

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// Releases `parties` threads at once. Spins with `sched_yield`, and traps after 60 s instead
/// of hanging if a party never arrives.
public final class Barrier: Sendable {
    private let parties: Int
    private let arrived = Atomic<Int>(0)

    public init(parties: Int) {
        self.parties = parties
    }

    public func arriveAndWait() {
        self.arrived.add(1, ordering: .acquiringAndReleasing)
        let start = monotonicNow()
        while self.arrived.load(ordering: .acquiring) < self.parties {
            sched_yield()
            precondition(monotonicNow() - start < 60_000_000_000, "Barrier: a party never arrived within 60 s")
        }
    }
}

/// The number of threads of this process, read from /proc/self/task.
public func currentThreadCount() -> Int {
    guard let directory = opendir("/proc/self/task") else { return -1 }
    defer { closedir(directory) }
    var count = 0
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { count += 1 }
    }
    return count
}

/// The kernel names of this process's threads, read from /proc/self/task/*/comm.
public func currentThreadNames() -> [String] {
    guard let directory = opendir("/proc/self/task") else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let id = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard id != "." && id != ".." else { continue }
        guard let file = fopen("/proc/self/task/\(id)/comm", "r") else { continue }
        var buffer = [CChar](repeating: 0, count: 64)
        if fgets(&buffer, 64, file) != nil {
            names.append(String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        fclose(file)
    }
    return names
}

/// Waits until `condition` holds, checking every millisecond, for at most `timeout`.
/// Returns whether it held. For conditions no semaphore can express (thread counts).
public func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let limit = monotonicNow() + UInt64(timeout.components.seconds) * 1_000_000_000
    while !condition() {
        if monotonicNow() > limit { return false }
        var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
        nanosleep(&pause, nil)
    }
    return true
}

/// Starts `body` on a thread of its own (a dedicated queue's worker, named `label`) and returns
/// that queue, which keeps the thread, and a semaphore signalled when `body` returned.
public func onAThreadOfItsOwn(_ label: String, _ body: @escaping @Sendable () -> Void) -> (SerialQueue, TestSemaphore) {
    let thread = SerialQueue(label: label)
    let done = TestSemaphore()
    thread.async {
        body()
        done.signal()
    }
    return (thread, done)
}
