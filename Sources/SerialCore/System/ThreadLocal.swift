import Glibc

/// One value of type `Value` per thread, created on first use and released when the
/// thread exits (by the pthread key's destructor).
///
/// The key lives for the whole process: instances are meant to be `static let`s.
final class ThreadLocal<Value: AnyObject>: @unchecked Sendable {  // the key is immutable after init
    private let key: pthread_key_t
    private let make: () -> Value

    init(make: @escaping () -> Value) {
        self.make = make
        var key = pthread_key_t()
        checkPthread(
            pthread_key_create(&key) { pointer in
                guard let pointer else { return }
                Unmanaged<AnyObject>.fromOpaque(pointer).release()
            }, "pthread_key_create")
        self.key = key
    }

    /// This thread's value; the first call on a thread creates it (one allocation per thread).
    @inline(__always)
    var value: Value { self.unmanagedValue.takeUnretainedValue() }

    /// This thread's value without a retain: the thread keeps it alive until it exits, so it
    /// is valid for as long as the caller runs on this thread.
    @inline(__always)
    var unmanagedValue: Unmanaged<Value> {
        if let pointer = pthread_getspecific(self.key) {
            return Unmanaged<Value>.fromOpaque(pointer)
        }
        return self.makeValue()
    }

    @inline(never)
    private func makeValue() -> Unmanaged<Value> {
        let value = Unmanaged.passRetained(self.make())
        checkPthread(pthread_setspecific(self.key, value.toOpaque()), "pthread_setspecific")
        return value
    }
}
