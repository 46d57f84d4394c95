/// A fixed set of worker threads that many `SerialQueue`s share, as libdispatch runs many serial
/// queues on its thread pool.
///
/// ```swift
/// let pool = WorkerPool(threads: 4)
/// let queues = (0..<10_000).map { SerialQueue(label: "conn-\($0)", pool: pool) }
/// ```
///
/// A pooled queue keeps every guarantee of a queue with its own thread (one total order, `sync`
/// on the caller's thread, `isCurrent`, the reentrancy traps, suspension, shutdown, release,
/// executors); what changes is which thread runs its `async` work: one of the pool's, one at a
/// time per queue, in FIFO order. A queue with work waits for a pool thread; a pool thread runs
/// one *turn* of it — at most 64 items, so one busy queue cannot starve the others — and puts it
/// back behind the work waiting if work remains (behind the queues in the pool's run queue while
/// any wait there). An idle queue costs no thread and no wake-up: it is a few hundred bytes of
/// memory.
///
/// **Where runnable work waits.** Work from outside the pool goes to the pool's run queue (one
/// lock). Work a pool thread's own turn makes runnable stays with that thread, without any lock
/// and without waking anyone: in its `next` slot (it runs right after the current turn: `B.async`
/// from A's work, or an actor on B called from an actor on A, runs after A's turn, on the same
/// thread) or, when that is taken and every other pool thread is busy, in the thread's own run
/// queue, which it takes from between looks at the pool's run queue (the two alternate). A
/// thread that runs out of work takes the pool's run queue's head, else steals half of another
/// thread's own run queue, else watches the other threads' `next` slots; so on more cores,
/// threads that are busy never contend for one lock, and a chain of actor hops stays on one
/// thread and one core.
///
/// **Work-conserving, within a stated delay.** A queue waiting in a busy thread's `next` slot is
/// taken by a free thread once it has waited there ``nextPatience`` (5 µs) without the busy thread
/// coming back to it (its current item runs long), or at once when that thread is about to block.
/// A free thread does not sleep while a `next` slot holds a queue that no thread watches, and a
/// `next` fill that finds free threads but no watcher wakes one to watch. A watch that sees only
/// turnover (every fill it watched was taken by its own thread within the patience: a chain of
/// hops runs there) ends after two patiences, and its thread dozes for 50 µs, counted as a
/// watcher (a fill wakes nobody for it), then watches again: so a free thread beside a ping-pong
/// watches about a sixth of the time instead of spinning a core for as long as the ping-pong
/// lasts. So runnable work never waits more than 5 µs while a pool thread watches; the doze (50 µs,
/// plus the lateness of a timed wait: Linux lets an ordinary thread's timer fire up to 50 µs late)
/// plus two patiences while the free threads doze; and the patience plus a wake-up while the
/// free threads sleep (plus, each time, the free thread's own scheduling: on a loaded machine,
/// the time until the kernel runs it; measured 11–12 µs at the median, 73–84 µs at the 99th
/// percentile, on a 2-core VM at load 2.6); other work made runnable while a
/// thread is free goes to the pool's run queue at once, waking an idle thread unless a spinning
/// one will look. The delay is what a hop saves: a hop that crossed to an idle thread cost a
/// wake-up (several microseconds) and moved the queue to another core; `compare`'s
/// `conservation_delay_p99` row measures the wait. At most 64 hops through `next` run in a row
/// while other work waits, none while due delayed work waits for a thread (below); after 64 the
/// `next` queue goes behind the work waiting, so a chain that never ends (two queues posting to
/// each other) starves neither the thread's own run queue nor the pool's.
///
/// **Blocking.** A pool thread that blocks in this library's own waits (a `sync` on a busy queue,
/// room in a bounded queue, a `shutdown` or release waiting for a queue to drain) is replaced by
/// a stand-in thread while it waits, so the pool always has `threads` threads free to run queues
/// and such a wait cannot deadlock the pool; a stand-in leaves once it is surplus. Work that
/// blocks a pool thread in other ways (a semaphore, a blocking system call) takes that thread
/// from every queue of the pool for that long: give such work a queue with its own thread.
///
/// **Delayed work** of idle pooled queues is woken by one timer thread per pool, which sleeps
/// until the earliest deadline (without a deadline when none is armed); `asyncAfter` on an idle
/// queue arms it at once. Work that falls due goes to the head of the run queue, ahead of the
/// queues waiting for a thread and behind the work that fell due before it (due work runs in
/// the order it fell due), and a thread running a chain of `next` hops breaks the chain for
/// it after its current turn (the `next` queue goes to the run queue's tail): never early, and
/// when every pool thread is busy it is late by at most the rest of one turn (64 items of one
/// queue) behind the work that fell due before it; work falling due at the same instant does so
/// in the order it was scheduled. Delayed work of a queue that is itself busy, or already waiting
/// in the run queue for a thread, joins its FIFO and runs at that queue's next turn: the queue
/// keeps its place rather than taking its other work ahead of the queues waiting with it.
///
/// **Lifetime.** The pool lives while its handle or any queue created on it does. `shutdown`
/// shuts down every queue still attached (as `SerialQueue.shutdown`: their work drains or is
/// dropped per the mode, their shutdown handlers run, later work is rejected by their usual
/// trap or error), waits for them to exit, then stops the threads; creating a queue on a shut-down
/// pool fails with `SerialQueueError.poolShutDown`. Releasing the last reference (handle and
/// queues gone) stops the threads once the released queues have drained, and waits for them
/// unless it happens on one of the pool's own threads.
public final class WorkerPool: Sendable {
    /// Names the pool's threads (first 15 bytes) and its errors.
    public let label: String
    /// How many threads the pool keeps free to run queues.
    public let threads: Int
    let core: PoolCore

    /// The bound of the pool's work conservation: how long a queue made runnable by a busy pool
    /// thread's own turn may wait in that thread's `next` slot before a free thread takes it
    /// (plus the free thread's own scheduling). 5 µs: below a wake-up, far above a hop.
    public static let nextPatience: Duration = .nanoseconds(Int64(PoolCore.nextPatienceNanoseconds))

    /// The default width: the processors this process may use, as the system limits it.
    ///
    /// That is the processors in the process's affinity mask (which a cpuset narrows), capped by
    /// the cgroup CPU quota rounded up (cgroup v2's `cpu.max`, else v1's `cpu.cfs_quota_us` over
    /// `cpu.cfs_period_us`; the smallest of the process's cgroup and its ancestors, under
    /// `/sys/fs/cgroup`), and at least 1. In a container limited to 1.5 CPUs on a 16-core host it
    /// is 2, not 16: more threads would only be throttled together.
    ///
    /// The environment variable `SERIAL_POOL_THREADS`, when it holds a whole number from 1 to
    /// 1,024, replaces all of that. Any other value is ignored (a larger one is more likely a typo
    /// than a wish), with one line on standard error saying so and
    /// what is used instead. Read anew at each call (each pool's creation), never cached.
    public static var defaultThreadCount: Int { SystemProcessors.defaultPoolWidth() }

    /// Starts a pool of `threads` threads (plus one timer thread), named from `label`.
    ///
    /// - Precondition: `threads` ≥ 1, and the system can start the threads (otherwise this
    ///   traps, saying why; use `make(threads:label:)` to get an error instead).
    public convenience init(threads: Int = WorkerPool.defaultThreadCount, label: String = "WorkerPool") {
        do {
            try self.init(starting: threads, label: label)
        } catch {
            Misuse.poolStartFailed(error)
        }
    }

    /// Starts a pool like `init(threads:label:)`, but reports threads that cannot be started
    /// as an error instead of a trap.
    ///
    /// - Throws: `SerialQueueError.poolThreadStartFailed`, with `pthread_create`'s errno in words.
    public static func make(
        threads: Int = WorkerPool.defaultThreadCount, label: String = "WorkerPool"
    ) throws(SerialQueueError) -> WorkerPool {
        try WorkerPool(starting: threads, label: label)
    }

    private init(starting threads: Int, label: String) throws(SerialQueueError) {
        if threads < 1 { Misuse.invalidPoolWidth(label: label, threads) }
        let core = PoolCore(label: label, width: threads)
        do {
            try core.timers.start()
            try core.start()
        } catch {
            core.stop(waiting: true)
            throw SerialQueueError.poolThreadStartFailed(pool: label, errno: error.errno, reason: error.reason)
        }
        self.label = label
        self.threads = threads
        self.core = core
        core.taskExecutor = self.asUnownedTaskExecutor()  // before any task can prefer the pool
    }

    deinit {
        // Every queue created on the pool is gone too (each holds the pool): its threads leave
        // once the released queues drained. Waiting on one of them would wait for itself.
        self.core.stop(waiting: !self.core.isPoolThread)
    }

    /// Shuts down every queue still attached to the pool (with `mode`, as each queue's own
    /// `shutdown` would), waits until they have run or dropped their work and run their shutdown
    /// handlers, then stops the pool's threads and waits for them to leave. Queues created later
    /// fail with `SerialQueueError.poolShutDown`. Calling it again only waits.
    ///
    /// - Precondition: Not called from work running on one of the pool's threads, nor inside a
    ///   `sync` body of one of its queues (either would wait for itself); that traps, naming the
    ///   pool (and the queue).
    public func shutdown(_ mode: ShutdownMode = .drain) {
        if self.core.isPoolThread { Misuse.poolShutdownFromItsOwnThread(label: self.label) }
        if let queue = CurrentQueueStack.current.heldQueueLabel(on: self.core) {
            Misuse.poolShutdownInsideItsQueue(label: self.label, queue: queue)
        }
        for queue in self.core.close() {
            queue.beginShutdown(mode)
        }
        self.core.waitUntilNoQueueIsAttached()
        self.core.stop(waiting: true)
    }

    /// Whether `shutdown` was called (no more queues can be created on the pool).
    public var isShutDown: Bool { self.core.mutex.withLock { self.core.state.isClosed } }

    /// Queues created on the pool that have not yet exited (shut down or released, and drained).
    public var queueCount: Int { self.core.attachedCount }
}

extension WorkerPool: CustomStringConvertible {
    /// The pool's label and thread count, for logs.
    public var description: String { "WorkerPool(\"\(self.label)\", threads: \(self.threads))" }
}
