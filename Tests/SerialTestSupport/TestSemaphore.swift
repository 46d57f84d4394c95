import Glibc

/// A counting semaphore whose waits always end: `wait(timeout:)` reports a timeout instead of
/// hanging, so a test that loses a wake-up fails with a message instead of stalling CI.
public final class TestSemaphore: @unchecked Sendable {  // state guarded by `mutex`
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var count: Int

    public init(value: Int = 0) {
        self.count = value
        pthread_mutex_init(&self.mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(&self.condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(&self.condition)
        pthread_mutex_destroy(&self.mutex)
    }

    public func signal(_ times: Int = 1) {
        pthread_mutex_lock(&self.mutex)
        self.count += times
        pthread_cond_broadcast(&self.condition)
        pthread_mutex_unlock(&self.mutex)
    }

    /// Waits for one signal; `false` when `timeout` passed first.
    public func wait(timeout: Duration = .seconds(30)) -> Bool {
        let deadline = monotonicNow() + UInt64(max(0, timeout.components.seconds)) * 1_000_000_000
            + UInt64(timeout.components.attoseconds / 1_000_000_000)
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_mutex_lock(&self.mutex)
        defer { pthread_mutex_unlock(&self.mutex) }
        while self.count == 0 {
            if pthread_cond_timedwait(&self.condition, &self.mutex, &time) == ETIMEDOUT && self.count == 0 {
                return false
            }
        }
        self.count -= 1
        return true
    }
}

/// Nanoseconds on CLOCK_MONOTONIC.
public func monotonicNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
