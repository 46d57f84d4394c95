#if SERIAL_SIMULATION
import Glibc
import Synchronization

/// The seam operations of a simulated thread: each updates the model and is a scheduling point.
/// Called only by the thread that holds the baton (`me`), from the seam in `System/`.
extension SimulationKernel {
    /// Under the lock: a thread of a run that has ended (stuck, then released) never runs again,
    /// and must not touch objects that a later run may be using.
    func parkIfEnded(_ me: SimulatedThread) {
        while self.status != .running {
            self.leave()
            me.waitForBaton()  // never given again
            self.enter()
        }
    }

    // MARK: Mutex

    func lock(_ mutex: PthreadMutex, by me: SimulatedThread) {
        self.enter()
        self.parkIfEnded(me)
        let id = self.id(of: &mutex.simulationTag)
        if _slowPath(self.mutexOwners[id] == me.id) {
            fatalError("simulation: \(me.title) locks mutex M\(id), which it already holds (it would deadlock)")
        }
        self.mix(0x10, me.id, id)
        me.state = .locking(mutex: id)
        self.yield(me)  // picked only while the mutex is free
        self.mutexOwners[id] = me.id
        me.state = .ready
        self.leave()
        checkPthread(pthread_mutex_lock(mutex.pointer), "pthread_mutex_lock")
    }

    func unlock(_ mutex: PthreadMutex, by me: SimulatedThread) {
        checkPthread(pthread_mutex_unlock(mutex.pointer), "pthread_mutex_unlock")
        self.enter()
        self.parkIfEnded(me)
        let id = self.id(of: &mutex.simulationTag)
        if _slowPath(self.mutexOwners[id] != me.id) {
            fatalError("simulation: \(me.title) unlocks mutex M\(id), which it does not hold")
        }
        self.mutexOwners[id] = nil
        self.mix(0x11, me.id, id)
        self.yield(me)
        self.leave()
    }

    // MARK: Condition

    /// Waits on `condition`, releasing `mutex` (held by `me`) meanwhile; with a `deadline`, the
    /// wait also ends when virtual time reaches it. Returns with `mutex` held again.
    func wait(
        on condition: PthreadCondition, releasing mutex: PthreadMutex, until deadline: UInt64?, by me: SimulatedThread
    ) {
        checkPthread(pthread_mutex_unlock(mutex.pointer), "pthread_mutex_unlock")
        self.enter()
        self.parkIfEnded(me)
        let conditionID = self.id(of: &condition.simulationTag)
        let mutexID = self.id(of: &mutex.simulationTag)
        if _slowPath(self.mutexOwners[mutexID] != me.id) {
            fatalError("simulation: \(me.title) waits on C\(conditionID) without holding its mutex M\(mutexID)")
        }
        self.mutexOwners[mutexID] = nil
        self.conditionWaiters[conditionID, default: []].append(me.id)
        me.state = .waiting(condition: conditionID, mutex: mutexID, deadline: deadline)
        me.timedOut = false
        self.mix(0x20, me.id, conditionID, deadline ?? .max)
        self.yield(me)  // back once signalled or timed out, and the mutex is free
        self.mutexOwners[mutexID] = me.id
        me.state = .ready
        self.leave()
        checkPthread(pthread_mutex_lock(mutex.pointer), "pthread_mutex_lock")
    }

    /// Wakes the longest waiter of `condition` (or all of them): they then compete for their mutex.
    func signal(_ condition: PthreadCondition, all: Bool, by me: SimulatedThread) {
        self.enter()
        self.parkIfEnded(me)
        let id = self.id(of: &condition.simulationTag)
        var waiters = self.conditionWaiters[id] ?? []
        let woken = all ? waiters : Array(waiters.prefix(1))
        waiters.removeFirst(woken.count)
        self.conditionWaiters[id] = waiters.isEmpty ? nil : waiters
        for thread in woken {
            guard case .waiting(_, let mutex, _) = self.threads[thread].state else {
                fatalError("simulation: T\(thread) is on C\(id)'s waiters but not waiting (internal inconsistency)")
            }
            self.threads[thread].state = .locking(mutex: mutex)
        }
        self.mix(all ? 0x22 : 0x21, me.id, id, UInt64(woken.count))
        self.yield(me)
        self.leave()
    }

    // MARK: Clock

    /// Virtual monotonic time: every read moves it on by a quantum, so a loop that watches the
    /// clock (a spin window, a deadline) ends, and each read lets other threads run.
    func readClock(by me: SimulatedThread) -> UInt64 {
        self.enter()
        self.parkIfEnded(me)
        self.now &+= self.limits.clockQuantumNanoseconds
        self.mix(0x30, me.id, 0, self.now)
        self.yield(me)
        let now = self.now
        self.leave()
        return now
    }

    // MARK: Atomics

    /// Before an atomic operation of the seam (`SeamAtomic`) by `me`: a scheduling point, so other
    /// threads may run between two atomic operations with no lock between them. The caller then
    /// runs the real operation, still alone.
    func atomicStep(_ operation: SeamAtomicOperation, on tag: borrowing Atomic<Int>, by me: SimulatedThread) {
        self.enter()
        self.parkIfEnded(me)
        // The tag packs the run's generation (high half) and the atomic's id, as `SimulationObjectTag`.
        let packed = tag.load(ordering: .relaxed)
        var object = SimulationObjectTag(generation: packed >> 32, id: packed & 0xFFFF_FFFF)
        let id = self.id(of: &object)
        tag.store(object.generation << 32 | object.id, ordering: .relaxed)
        self.mix(operation.rawValue, me.id, id)
        self.yield(me)
        self.leave()
    }

    // MARK: Threads

    /// Adds a thread named `name` to the run, not yet started: returns it and the body its
    /// pthread must run (which waits for the baton first and hands it on when `body` returns).
    func register(name: String, body: @escaping () -> Void) -> (SimulatedThread, () -> Void) {
        self.enter()
        let thread = SimulatedThread(id: self.threads.count, name: name, kernel: self)
        self.threads.append(thread)
        self.mix(0x40, thread.id, 0)
        self.leave()
        return (thread, { [self] in
            SimulationTrapLine.withAlternateStack {
                SimulatedThread.setCurrent(thread)
                self.arrive(thread)
                body()
                self.finish(thread)
            }
        })
    }

    /// After `pthread_create` (`handle`, or `nil` when it failed) by `me` (`nil`: the controller).
    func started(_ thread: SimulatedThread, handle: pthread_t?, by me: SimulatedThread?) {
        self.enter()
        thread.handle = handle
        if handle == nil { thread.state = .finished }
        if let me { self.yield(me) }
        self.leave()
    }

    /// A new thread's first act: wait until the scheduler first picks it.
    private func arrive(_ thread: SimulatedThread) {
        self.enter()
        self.sleepUntilPicked(thread)
        self.leave()
        thread.stack = CurrentQueueStack.current
    }

    /// A thread's last act: hand the baton on and leave the simulation.
    private func finish(_ thread: SimulatedThread) {
        self.enter()
        thread.state = .finished
        self.mix(0x41, thread.id, 0)
        self.yield(thread)
        self.leave()
        // Thread-exit destructors (queue stacks, conditions) run outside the simulation.
        SimulatedThread.setCurrent(nil)
    }

    /// Waits in the model until the thread behind `handle` has finished, then joins the pthread
    /// (already on its way out). `false` when `handle` is not one of this run's threads.
    func join(_ handle: pthread_t, by me: SimulatedThread) -> Bool {
        self.enter()
        self.parkIfEnded(me)
        // The newest thread with that handle: pthreads reuses a joined thread's handle for a
        // later thread, and an older record, finished, would let the join through while the
        // thread it names still waits for the baton (then the real join never returns).
        guard let target = self.threads.last(where: { $0.handle.map { pthread_equal($0, handle) != 0 } ?? false })
        else {
            self.leave()
            return false
        }
        self.mix(0x42, me.id, target.id)
        me.state = .joining(thread: target.id)
        self.yield(me)
        me.state = .ready
        self.leave()
        checkPthread(pthread_join(handle, nil), "pthread_join")
        return true
    }

    // MARK: Quiescence

    /// Waits until no other thread of the run can run and no timed wait is left to end (every
    /// other thread finished, or waits for something only a thread could do).
    func waitUntilQuiescent(by me: SimulatedThread) {
        self.enter()
        self.parkIfEnded(me)
        self.mix(0x50, me.id, 0)
        me.state = .awaitingQuiescence
        self.yield(me)
        me.state = .ready
        self.leave()
    }

    /// Ends the run with a failure seen by `me`, which then stays parked with the others.
    func fail(_ kind: SimulationFailure.Kind, _ message: String, by me: SimulatedThread) -> Never {
        self.enter()
        self.end(kind, message)
        self.leave()
        while true { me.waitForBaton() }  // never given again: the run has ended
    }

    // MARK: Checks

    /// A failed expectation of the scenario: recorded (the first one wins), and the run goes on.
    func check(failedWith message: String, by me: SimulatedThread) {
        self.enter()
        self.parkIfEnded(me)
        self.recordFailure(.check, "\(me.title): \(message)")
        self.leave()
    }
}
#endif
