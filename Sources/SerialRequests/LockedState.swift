import Synchronization

/// A `Mutex` whose ordering ThreadSanitizer can see.
///
/// Why: on Linux, `Synchronization.Mutex` locks with futexes inside the standard library, which
/// is not built with ThreadSanitizer, so TSan sees no happens-before edge between critical
/// sections and reports every access to the protected value as a race (a false positive, reproduced
/// with a four-thread `Mutex<[Int]>` append loop). Each critical section here also begins with an
/// acquiring and ends with a releasing add on an atomic counter next to the mutex: redundant for
/// the memory model (the mutex already orders the sections), but compiled into this module, so
/// TSan sees the edge. Cost: two uncontended atomic adds per section.
struct LockedState<Value>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    private let handoff = Atomic<UInt>(0)

    init(_ value: consuming sending Value) {
        self.mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value. `body` must not call out to user code.
    borrowing func withLock<Result>(_ body: (inout sending Value) -> sending Result) -> sending Result {
        self.mutex.withLock { (value: inout sending Value) -> sending Result in
            self.handoff.add(1, ordering: .acquiring)
            defer { self.handoff.add(1, ordering: .releasing) }
            return body(&value)
        }
    }
}
