import Glibc

/// When a group of threads was released and when each of them finished (`CLOCK_MONOTONIC` ns).
struct ThreadTimes {
    var released: UInt64
    var finished: [UInt64]

    /// Nanoseconds from the release until the last of `threads` finished.
    func elapsed(_ threads: some Sequence<Int>) -> UInt64 {
        threads.map { self.finished[$0] }.max()! - self.released
    }
}

/// Runs `body(index)` on `count` new pthreads released together; returns once all have
/// finished, with the release and finish times.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> ThreadTimes {
    let gate = Gate()
    let finished = Latch(count: count)
    let finishTimes = Samples(count: count)
    var handles: [pthread_t] = []
    for index in 0..<count {
        let start = Unmanaged.passRetained(ThreadStart {
            gate.pass()
            body(index)
            finishTimes.record(Clock.now(), at: index)
            finished.countDown()
        }).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(&handle, nil, { argument in
            Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }, start)
        precondition(rc == 0, "pthread_create failed with error \(rc)")
        handles.append(handle)
    }
    gate.awaitArrivals(count)
    let released = Clock.now()
    gate.open()
    finished.wait(seconds: 300, "\(count) benchmark threads")
    for handle in handles { pthread_join(handle, nil) }
    return ThreadTimes(released: released, finished: Array(finishTimes.pointer))
}

private final class ThreadStart {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// Holds threads until every one has arrived and the gate is opened, so they start together.
private final class Gate: @unchecked Sendable {  // all state is guarded by `mutex`
    private var mutex = pthread_mutex_t()
    private var changed = pthread_cond_t()
    private var arrived = 0
    private var isOpen = false

    init() {
        pthread_mutex_init(&self.mutex, nil)
        pthread_cond_init(&self.changed, nil)
    }

    deinit {
        pthread_cond_destroy(&self.changed)
        pthread_mutex_destroy(&self.mutex)
    }

    func pass() {
        pthread_mutex_lock(&self.mutex)
        self.arrived += 1
        pthread_cond_broadcast(&self.changed)
        while !self.isOpen { pthread_cond_wait(&self.changed, &self.mutex) }
        pthread_mutex_unlock(&self.mutex)
    }

    func awaitArrivals(_ count: Int) {
        pthread_mutex_lock(&self.mutex)
        while self.arrived < count { pthread_cond_wait(&self.changed, &self.mutex) }
        pthread_mutex_unlock(&self.mutex)
    }

    func open() {
        pthread_mutex_lock(&self.mutex)
        self.isOpen = true
        pthread_cond_broadcast(&self.changed)
        pthread_mutex_unlock(&self.mutex)
    }
}
