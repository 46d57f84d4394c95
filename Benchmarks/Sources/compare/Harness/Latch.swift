import Glibc

/// A count-down latch on a pthread mutex and condition variable: `wait` returns once
/// `countDown` has been called `count` times. Used to learn that a peer drained its work
/// without involving any peer's own machinery in the wait.
final class Latch: @unchecked Sendable {  // all state is guarded by `mutex`
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var remaining: Int

    init(count: Int = 1) {
        self.remaining = count
        pthread_mutex_init(&self.mutex, nil)
        pthread_cond_init(&self.condition, nil)
    }

    deinit {
        pthread_cond_destroy(&self.condition)
        pthread_mutex_destroy(&self.mutex)
    }

    func countDown() {
        pthread_mutex_lock(&self.mutex)
        self.remaining -= 1
        if self.remaining == 0 { pthread_cond_broadcast(&self.condition) }
        pthread_mutex_unlock(&self.mutex)
    }

    /// Waits for the count to reach zero; traps after `seconds` so a broken peer cannot hang the run.
    func wait(seconds: Int = 120, _ what: @autoclosure () -> String = "work") {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += seconds
        pthread_mutex_lock(&self.mutex)
        while self.remaining > 0 {
            if pthread_cond_timedwait(&self.condition, &self.mutex, &deadline) == ETIMEDOUT && self.remaining > 0 {
                pthread_mutex_unlock(&self.mutex)
                fatalError("compare: \(what()) did not finish within \(seconds) s")
            }
        }
        pthread_mutex_unlock(&self.mutex)
    }
}
