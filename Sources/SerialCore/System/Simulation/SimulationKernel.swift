#if SERIAL_SIMULATION
import Glibc

/// One simulation run's world: its threads, who holds the baton, the model of every mutex and
/// condition they touched, virtual time, and the scheduler that decides each step.
///
/// Exactly one simulated thread runs at a time: the one named by `running`. A thread at a seam
/// operation updates the model, then `yield`s: the scheduler picks the next runner among the
/// threads that may run, and the caller sleeps on its own baton (a semaphore, posted once the
/// lock is released) until it is picked again. Every field is guarded by `lock`, a real mutex,
/// which also orders each runner's memory after the previous one's (happens-before through the
/// hand-off).
///
/// The model mirrors, it does not replace: a thread granted a mutex in the model still takes
/// the real one (it is free, unless a thread outside the simulation holds it), so state left
/// by a run is consistent for ordinary threads afterwards.
final class SimulationKernel: @unchecked Sendable {  // every field is guarded by `lock`
    let lock: UnsafeMutablePointer<pthread_mutex_t>
    /// Signalled when the run ends, for the controlling (unsimulated) thread.
    let ended: UnsafeMutablePointer<pthread_cond_t>
    let limits: SimulationLimits
    /// Distinguishes this run's object ids from earlier runs' (objects can outlive a run).
    let generation: Int

    var threads: [SimulatedThread] = []
    /// The id of the thread that holds the baton.
    var running: Int?
    var scheduler: SimulationScheduler
    /// Virtual `CLOCK_MONOTONIC` nanoseconds.
    var now: UInt64
    var status: Status = .running
    var failure: SimulationFailure?
    /// FNV-1a over every decision and event: two runs with equal hashes took the same path.
    var traceHash: UInt64 = 0xCBF2_9CE4_8422_2325
    var events = 0

    /// Mutex id → id of the thread that owns it (absent: free).
    var mutexOwners: [Int: Int] = [:]
    /// Condition id → ids of its waiters, in the order they began to wait.
    var conditionWaiters: [Int: [Int]] = [:]
    /// Checked at every scheduling point (`checkInvariants`).
    var invariants: [SimulationInvariant] = []
    /// Properties that must eventually hold (`checkLiveness`).
    var liveness: [SimulationLiveness] = []
    /// The trace hash and the thread picked at each scheduling point, when
    /// `limits.recordsSteps` (the determinism check compares two runs' records).
    var stepMarks: [SimulationStepMark] = []
    /// How many threads are inside a runtime callback (`SimulatedThread.runtimeCallbacks` above 0).
    var threadsInRuntimeCallbacks = 0
    /// The ids of the threads that may run, at the current pick (`pickNext`).
    private var runnable: [Int] = []
    /// The thread given the baton under the lock, woken once the lock is released (`leave`).
    private var picked: SimulatedThread?
    private var nextObjectID = 1

    /// The failure line's fixed part, as bytes a signal handler can write without allocating.
    let trapLineSuffix: [UInt8]

    enum Status: Equatable {
        case running
        case completed
        case failed
    }

    private static let generations = LockedValue(0)

    init(scheduler: SimulationScheduler, limits: SimulationLimits) {
        self.scheduler = scheduler
        self.limits = limits
        self.now = limits.startNanoseconds
        self.generation = Self.generations.withLock {
            $0 += 1
            return $0
        }
        self.lock = .allocate(capacity: 1)
        checkPthread(pthread_mutex_init(self.lock, nil), "pthread_mutex_init")
        self.ended = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        checkPthread(pthread_condattr_init(&attributes), "pthread_condattr_init")
        checkPthread(pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC), "pthread_condattr_setclock")
        checkPthread(pthread_cond_init(self.ended, &attributes), "pthread_cond_init")
        checkPthread(pthread_condattr_destroy(&attributes), "pthread_condattr_destroy")
        let strategy = scheduler.strategy.name
        self.trapLineSuffix = Array(
            " (seed \(scheduler.seed), strategy \(strategy)); replay: sim1:\(strategy):\(scheduler.seed):".utf8)
    }

    @inline(__always)
    func enter() { checkPthread(pthread_mutex_lock(self.lock), "pthread_mutex_lock") }

    /// Releases the lock, then gives the baton to the thread picked under it, if any.
    @inline(__always)
    func leave() {
        let picked = self.picked
        self.picked = nil
        checkPthread(pthread_mutex_unlock(self.lock), "pthread_mutex_unlock")
        picked?.giveBaton()
    }

    /// Under the lock, by `me`: sleeps until `me` holds the baton in a running run (never, once
    /// the run has ended).
    func sleepUntilPicked(_ me: SimulatedThread) {
        while self.running != me.id || self.status != .running {
            self.leave()
            me.waitForBaton()
            self.enter()
        }
    }

    // MARK: Scheduling

    /// Under the lock, by the running thread `me` after it updated its state: picks the next
    /// runner and, unless that is `me` (or `me` has finished), sleeps until `me` runs again.
    /// When the run has ended, `me` never runs again: a failed run's threads stay parked.
    func yield(_ me: SimulatedThread) {
        if self.status == .running {
            if _slowPath(self.running != me.id) {
                fatalError("simulation: \(me.title) reached a seam operation without the baton "
                    + "(internal inconsistency)")
            }
            self.checkInvariants()
            self.checkLiveness()
            self.pickNext(me)
        }
        if me.state == .finished { return }
        self.sleepUntilPicked(me)
    }

    /// Under the lock: hands the baton to the next thread, moving virtual time to the earliest
    /// deadline when nothing can run; ends the run when nothing ever can.
    private func pickNext(_ me: SimulatedThread) {
        guard self.status == .running else { return }
        while true {
            if self.scheduler.steps >= self.limits.maximumSteps {
                self.end(.stepLimit, "no end after \(self.limits.maximumSteps) scheduling points "
                    + "(a livelock, or raise SimulationLimits.maximumSteps)")
                return
            }
            self.expireTimedWaits()
            // Kept between picks, and filled by hand: this runs at every point, in debug builds.
            self.runnable.removeAll(keepingCapacity: true)
            for thread in self.threads where self.mayRun(thread) { self.runnable.append(thread.id) }
            let runnable = self.runnable
            if runnable.isEmpty {
                if let earliest = self.earliestDeadline() {
                    self.now = max(self.now, earliest)
                    continue
                }
                // Nothing can move: a thread that waits for that moment runs now (an async run's
                // main thread, to see whether every task finished).
                if let waiting = self.threads.first(where: { $0.state == .awaitingQuiescence }) {
                    waiting.state = .ready
                    self.mix(0x51, waiting.id, 0)
                    continue
                }
                if self.threads.allSatisfy({ $0.state == .finished }) {
                    if let hot = self.hotAtTheEnd() {
                        self.end(.liveness, hot)
                        return
                    }
                    self.status = .completed
                    self.running = nil
                    checkPthread(pthread_cond_broadcast(self.ended), "pthread_cond_broadcast")
                } else {
                    self.end(.deadlock, self.deadlockReport())
                }
                return
            }
            if let next = self.throughRuntimeCallback() {
                // Not a decision: the runtime may hold a lock that any other thread could block
                // on outside the seam (`RuntimeCallback`).
                self.mix(0xD2, next, 0)
                self.running = next
                if next != me.id { self.picked = self.threads[next] }
                return
            }
            let next = self.scheduler.next(among: runnable)
            self.mix(0xD1, next, runnable.count)
            if self.limits.recordsSteps { self.stepMarks.append(SimulationStepMark(hash: self.traceHash, thread: next)) }
            self.running = next
            if next != me.id { self.picked = self.threads[next] }
            return
        }
    }

    /// Under the lock: the thread that must run next when a thread is inside a runtime callback
    /// (`RuntimeCallback`), else `nil` (the scheduler decides). The thread in the callback, while it
    /// can run; while it waits for a mutex, that mutex's owner (or the owner's owner): the thread
    /// that will free it, and in the meantime no thread that could block on the runtime's lock.
    private func throughRuntimeCallback() -> Int? {
        guard self.threadsInRuntimeCallbacks > 0,
            var thread = self.threads.first(where: { $0.runtimeCallbacks > 0 && $0.state != .finished })
        else { return nil }
        for _ in self.threads.indices {
            if self.mayRun(thread) { return thread.id }
            guard case .locking(let mutex) = thread.state, let owner = self.mutexOwners[mutex] else { return nil }
            thread = self.threads[owner]
        }
        return nil
    }

    /// Under the lock, by the running thread `me`: `me` enters (`true`) or leaves a call from the
    /// Swift runtime into an executor. Not a scheduling point.
    func runtimeCallback(_ entering: Bool, by me: SimulatedThread) {
        self.parkIfEnded(me)
        me.runtimeCallbacks += entering ? 1 : -1
        if me.runtimeCallbacks == (entering ? 1 : 0) { self.threadsInRuntimeCallbacks += entering ? 1 : -1 }
    }

    private func mayRun(_ thread: SimulatedThread) -> Bool {
        switch thread.state {
        case .ready: return true
        case .locking(let mutex): return self.mutexOwners[mutex] == nil
        case .waiting: return false
        case .joining(let target): return self.threads[target].state == .finished
        case .finished, .awaitingQuiescence: return false
        }
    }

    /// Timed waits whose deadline virtual time has reached end, in thread order.
    private func expireTimedWaits() {
        for thread in self.threads {
            guard case .waiting(let condition, let mutex, let deadline?) = thread.state, deadline <= self.now else {
                continue
            }
            self.conditionWaiters[condition]?.removeAll { $0 == thread.id }
            if self.conditionWaiters[condition]?.isEmpty == true { self.conditionWaiters[condition] = nil }
            thread.state = .locking(mutex: mutex)
            thread.timedOut = true
            self.mix(0x7E, thread.id, condition)
        }
    }

    private func earliestDeadline() -> UInt64? {
        self.threads.compactMap { thread -> UInt64? in
            if case .waiting(_, _, let deadline?) = thread.state { return deadline }
            return nil
        }.min()
    }

    // MARK: Failures

    /// Under the lock: records the run's first failure (later ones add nothing).
    func recordFailure(_ kind: SimulationFailure.Kind, _ message: String) {
        guard self.failure == nil else { return }
        self.failure = SimulationFailure(
            kind: kind, message: message, step: self.scheduler.steps, token: self.scheduler.token)
    }

    /// Under the lock: ends the run with a failure; every thread stays parked (they are leaked:
    /// a thread stopped mid-operation cannot be unwound safely). A failure recorded earlier (a
    /// failed check) stays the run's failure, and this one is added to its report: a deadlock
    /// after a failed check is not hidden.
    func end(_ kind: SimulationFailure.Kind, _ message: String) {
        if let earlier = self.failure, self.status == .running {
            self.failure = SimulationFailure(
                kind: earlier.kind,
                message: earlier.message + "\nthen, at step \(self.scheduler.steps), \(kind.rawValue): \(message)",
                step: earlier.step, token: earlier.token)
        }
        self.recordFailure(kind, message)
        self.status = .failed
        self.running = nil
        checkPthread(pthread_cond_broadcast(self.ended), "pthread_cond_broadcast")
    }

    // MARK: Objects and trace

    /// The id of a mutex or condition in this run, given on first use (so it follows the schedule).
    func id(of tag: inout SimulationObjectTag) -> Int {
        if tag.generation != self.generation {
            tag.generation = self.generation
            tag.id = self.nextObjectID
            self.nextObjectID += 1
        }
        return tag.id
    }

    /// Adds an event or decision to the trace hash.
    func mix(_ code: UInt64, _ a: Int, _ b: Int, _ c: UInt64 = 0) {
        self.events += 1
        // No array of the four: this runs at every event, in debug builds.
        let prime: UInt64 = 0x0000_0100_0000_01B3
        var hash = (self.traceHash ^ code) &* prime
        hash = (hash ^ UInt64(truncatingIfNeeded: a)) &* prime
        hash = (hash ^ UInt64(truncatingIfNeeded: b)) &* prime
        self.traceHash = (hash ^ c) &* prime
    }
}

/// A mutex's or condition's identity within a simulation run, stored in the object itself
/// (keying by address would confuse an object with a dead one at the same address).
struct SimulationObjectTag {
    var generation = 0
    var id = 0
}
#endif
