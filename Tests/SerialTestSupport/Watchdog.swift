import Glibc

/// Runs `body` on the calling thread while a watchdog thread waits for it; if `body` has not
/// returned within `timeout`, the watchdog kills the process with `message` (and the seed), so
/// a lost wake-up fails CI loudly instead of hanging it.
public func withWatchdog<T>(timeout: Duration, _ message: @autoclosure () -> String, _ body: () throws -> T) rethrows -> T {
    let finished = TestSemaphore()
    let text = message()
    let watcher = WatchdogThread(finished: finished, timeout: timeout, message: text)
    defer {
        finished.signal()
        watcher.join()
    }
    return try body()
}

private final class WatchdogThread: @unchecked Sendable {  // immutable after init
    private var thread = pthread_t()

    init(finished: TestSemaphore, timeout: Duration, message: String) {
        let box = Unmanaged.passRetained(Box { [finished] in
            if !finished.wait(timeout: timeout) {
                fatalError("WATCHDOG: \(message) (no progress within \(timeout))")
            }
        }).toOpaque()
        let rc = pthread_create(&self.thread, nil, { argument in
            Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    func join() { pthread_join(self.thread, nil) }

    private final class Box {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
}

/// `withWatchdog` for an async body (which should do its blocking waits `offThePool`).
public func withWatchdog<T>(timeout: Duration, _ message: @autoclosure () -> String, _ body: () async throws -> T) async rethrows -> T {
    let finished = TestSemaphore()
    let watcher = WatchdogThread(finished: finished, timeout: timeout, message: message())
    defer {
        finished.signal()
        watcher.join()
    }
    return try await body()
}
