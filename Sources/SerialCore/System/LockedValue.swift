/// A value behind a pthread mutex, for the services built on SerialCore.
///
/// Why not `Synchronization.Mutex`: in debug builds under ThreadSanitizer its accesses are
/// reported as races (the standard library's futex-based lock is invisible to the sanitizer),
/// while pthread mutexes are intercepted and understood. Sanitizer runs are how this project
/// shows its concurrent code correct, so every lock goes through here.
///
/// Package-only. It is `Sendable` for any `Value`: callers keep non-`Sendable` state inside
/// and must not let it escape `withLock`.
package final class LockedValue<Value>: @unchecked Sendable {  // every access to `value` holds `mutex`
    private let mutex = PthreadMutex()
    // Guarded by `mutex`; runtime exclusivity checks would only repeat what the lock ensures.
    @exclusivity(unchecked) private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Precondition: `body` does not call `withLock` on the same instance (it would deadlock;
    ///   debug builds trap with EDEADLK).
    @inline(__always)
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        self.mutex.lock()
        defer { self.mutex.unlock() }
        return try body(&self.value)
    }
}
