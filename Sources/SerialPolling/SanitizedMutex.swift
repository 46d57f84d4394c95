import Synchronization

/// A `Mutex` whose hand-offs ThreadSanitizer can see.
///
/// On Linux, `Synchronization.Mutex` locks with futex operations inside the precompiled
/// standard library, which ThreadSanitizer does not observe: it then reports every hand-off of
/// the protected value between threads as a race (checked with Swift 6.3.1: four threads
/// incrementing a `Mutex<Int>` give two reports). Each critical section here also performs an
/// acquiring load on entry and a releasing store on exit of an atomic word, which the sanitizer
/// does observe; the lock already orders them, so the pair only makes that order visible. The
/// cost is one uncontended load and store on memory the lock holder just touched.
package struct SanitizedMutex<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    private let handOff = Atomic<UInt>(0)

    /// A lock protecting `value`.
    package init(_ value: consuming sending Value) {
        self.mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Complexity: O(1) plus `body`; not reentrant (a nested call on the same lock deadlocks).
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try self.mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            _ = self.handOff.load(ordering: .acquiring)
            defer { self.handOff.store(0, ordering: .releasing) }
            return try body(&value)
        }
    }
}
