import Synchronization

/// A `Synchronization.Mutex` whose hand-offs ThreadSanitizer can see.
///
/// On Linux, `Mutex` locks with futex calls inside the uninstrumented standard library, so
/// ThreadSanitizer sees no ordering between one holder and the next and reports every
/// access under the lock as a race (checked: a counter incremented only inside
/// `Mutex.withLock` from four threads is reported). Each critical section here begins with
/// an acquiring load of a counter and ends with a releasing store to it, made by code that
/// is instrumented, so the sanitizer sees the same happens-before edge the mutex provides.
/// On x86-64 both are plain moves: the cost is nil.
struct Locked<Value: ~Copyable>: ~Copyable {
    private let mutex: Mutex<Value>
    private let handOff = Atomic<UInt>(0)

    init(_ value: consuming sending Value) {
        self.mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value, as `Mutex.withLock`.
    @inline(__always)
    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try self.mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let seen = self.handOff.load(ordering: .acquiring)
            defer { self.handOff.store(seen &+ 1, ordering: .releasing) }
            return try body(&value)
        }
    }
}

extension Locked: @unchecked Sendable where Value: ~Copyable {}  // a Mutex, plus an atomic
