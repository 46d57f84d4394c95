import Glibc

/// Runs blocking `body` on a thread of its own while the calling task waits for it without
/// holding a cooperative thread.
///
/// Swift concurrency's pool has one thread per core: on this project's 2-core machines, two
/// tests that block their cooperative threads stall every task in the process. A test whose
/// code under test needs tasks (an async poll query, say) must therefore do its long blocking
/// waits here. `body` runs outside the test's task, so it best returns what the test then checks
/// with `#expect`. An `#expect` inside `body` still fails the run, with its source location and
/// message, but Swift Testing names no test for it («unknown»): the stress suite's bodies run
/// whole in here (so that they never hold a cooperative thread that other suites' tasks need),
/// and each of their messages names the seed.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let start = Unmanaged.passRetained(DetachedBody { continuation.resume(returning: body()) }).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            Unmanaged<DetachedBody>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, start)
        if rc != 0 { fatalError("offThePool: pthread_create failed with error \(rc)") }
        pthread_detach(thread)
    }
}

/// Like `runThreads`, but the calling task waits without holding a cooperative thread.
public func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await offThePool { runThreads(count, body) }
}

/// Like `eventually`, but the calling task waits without holding a cooperative thread.
public func eventually(timeout: Duration = .seconds(10), _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    await offThePool { eventually(timeout: timeout, condition) }
}

private final class DetachedBody: @unchecked Sendable {  // run once, on the new thread
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
