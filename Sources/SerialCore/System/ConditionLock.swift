/// A value behind a pthread mutex, with a condition variable to wait for it to change: for
/// SerialTesting's waits that must end by a deadline (a test never hangs).
///
/// Package-only, like `LockedValue`, and for the same reason built on pthreads: ThreadSanitizer
/// understands them.
package final class ConditionLock<Value>: @unchecked Sendable {  // every access to `value` holds `mutex`
    private let mutex = PthreadMutex()
    private let changed = PthreadCondition()
    // Guarded by `mutex`.
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value, then wakes every waiter.
    package func withLockThenBroadcast<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        self.mutex.lock()
        defer {
            self.mutex.unlock()
            self.changed.broadcast()
        }
        return try body(&self.value)
    }

    /// Runs `body` with exclusive access to the value, waking nobody.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        self.mutex.lock()
        defer { self.mutex.unlock() }
        return try body(&self.value)
    }

    /// Sleeps until `body` returns non-nil (checked under the lock at once and after every
    /// broadcast) or `deadline` passes on the monotonic clock; then returns `body`'s answer, or
    /// `nil` on timeout.
    package func wait<T>(until deadline: MonotonicInstant, for body: (inout Value) -> T?) -> T? {
        self.mutex.lock()
        defer { self.mutex.unlock() }
        while true {
            if let answer = body(&self.value) { return answer }
            if MonotonicInstant.now() >= deadline { return nil }
            self.changed.wait(releasing: self.mutex, until: deadline)
        }
    }
}
