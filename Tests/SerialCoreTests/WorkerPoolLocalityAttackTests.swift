import Glibc
import SerialCore
import SerialTestSupport
import Synchronization
import Foundation
import Testing

/// Attacks on issue 39's hop locality (branch attack39): a queue left in a `next` slot behind an
/// item that does not end, while the other threads idle, doze, retire or shut down; `sync`,
/// suspension and release of such a queue; due work and outside work beside a chain of hops; an
/// idle pool after a ping-pong. Real threads: each test checks what must hold whatever the timing
/// (liveness, order, no wake-ups), never a speed; the bounds in time are the simulator's
/// (`PoolLocalityAttackScenarios`). Every wait has a timeout that fails with a message.
@Suite("WorkerPool locality attacks", .onItsOwnThread)  // waits for pool work: off the cooperative threads
struct WorkerPoolLocalityAttackTests {
    static let patience = Duration.seconds(20)

    /// Busy (not blocked: the pool does not know) until `done` is signalled or 60 s passed: longer
    /// than any wait of the test (`patience`), so the item never ends in time by itself.
    static func spin(until done: TestSemaphore) -> Bool {
        let limit = monotonicNow() + 60_000_000_000
        while monotonicNow() < limit {
            if done.wait(timeout: .zero) { return true }
        }
        return false
    }

    /// A ping-pong between a and b (each turn posts the next hop to the other) until `stop` is set.
    /// `onHop` runs in each hop's turn, after it posted the next hop.
    static func startPingPong(
        _ a: SerialQueue, _ b: SerialQueue, hops: TestCounter, until stop: TestFlag,
        onHop: @escaping @Sendable () -> Void = {}
    ) {
        @Sendable func hop(here: SerialQueue, there: SerialQueue) {
            _ = hops.increment()
            if !stop.isSet { there.async { hop(here: there, there: here) } }
            onHop()  // after the next hop's post: work it posts finds the `next` slot taken
        }
        a.async { hop(here: a, there: b) }
    }

    // MARK: A fill left behind an item that does not end

    /// c waits in the `next` slot of x's thread while x's item goes on until c ran; a ping-pong
    /// runs on another thread meanwhile, and the rest are free (watching or dozing beside it).
    @Test(arguments: [3, 4])
    func aFillBehindALongItemRunsBesideAPingPong(width: Int) {
        let pool = WorkerPool(threads: width, label: "atk-pp")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let c = SerialQueue(label: "c", pool: pool)
        let x = SerialQueue(label: "x", pool: pool)
        let stop = TestFlag()
        let hops = TestCounter()
        Self.startPingPong(a, b, hops: hops, until: stop)
        #expect(eventually { hops.value > 1_000 }, "the ping-pong did not get going")
        let ranC = TestSemaphore()
        let sawIt = TestFlag()
        let done = TestSemaphore()
        x.async {
            c.async { ranC.signal() }
            if Self.spin(until: ranC) { sawIt.set() }
            done.signal()
        }
        #expect(done.wait(), "x's item never ended")
        stop.set()
        #expect(sawIt.isSet, "c waited in a next slot behind x's item for \(Self.patience) beside a ping-pong, \(width - 2) thread(s) free")
        a.sync {}
        b.sync {}
    }

    // MARK: Outside work and due work beside a chain of hops

    /// On 1 and 2 threads (the second held by a foreign wait: the chain's thread is the only one
    /// free), a ping-pong that never ends by itself lets work from outside and due delayed work
    /// run (the hop limit; due work ends a chain after the current turn): both run while it goes on.
    @Test(arguments: [1, 2])
    func anEndlessPingPongLetsOutsideAndDueWorkRun(width: Int) {
        let pool = WorkerPool(threads: width, label: "atk-chain")
        let holder = SerialQueue(label: "holder", pool: pool)
        let release = TestSemaphore()
        let held = TestSemaphore()
        if width == 2 {
            holder.async {
                held.signal()
                _ = release.wait(timeout: .seconds(60))  // past every wait of the test
            }
            #expect(held.wait(), "the second thread never got busy")
        }
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let outside = SerialQueue(label: "outside", pool: pool)
        let due = SerialQueue(label: "due", pool: pool)
        let stop = TestFlag()
        let hops = TestCounter()
        // Hops whose turn started while `due` waited in the run queue for a thread.
        let hopsWhileDueWaits = TestCounter()
        Self.startPingPong(a, b, hops: hops, until: stop) {
            if pool._runQueueHolds(due) { _ = hopsWhileDueWaits.increment() }
        }
        #expect(eventually { hops.value > 1_000 }, "the ping-pong did not get going")
        let ranOutside = TestSemaphore()
        outside.async { ranOutside.signal() }
        #expect(ranOutside.wait(timeout: Self.patience), "work from outside waited \(Self.patience) behind an endless ping-pong")
        let ranDue = TestSemaphore()
        _ = due.asyncAfter(delay: .milliseconds(2)) { ranDue.signal() }
        #expect(ranDue.wait(timeout: Self.patience), "due work waited \(Self.patience) behind an endless ping-pong")
        let stillHopping = hops.value
        #expect(eventually { hops.value > stillHopping + 100 }, "the ping-pong stopped by itself")
        stop.set()
        release.signal()
        a.sync {}
        b.sync {}
        // The turn running when `due` fell due may see it waiting; no later hop may start first.
        #expect(hopsWhileDueWaits.value <= 1, "\(hopsWhileDueWaits.value) hops started while due work waited")
    }

    /// Width 2, the second thread held by a foreign wait: a hop's item posts d after the next hop
    /// (the `next` slot is taken and no thread is free: d goes to the thread's own run queue).
    /// The chain never ends by itself; d runs while it goes on (the hop limit lets own work in).
    @Test func workInTheChainsOwnRunQueueRunsWhileTheChainGoesOn() {
        let pool = WorkerPool(threads: 2, label: "atk-local")
        let holder = SerialQueue(label: "holder", pool: pool)
        let release = TestSemaphore()
        let held = TestSemaphore()
        holder.async {
            held.signal()
            _ = release.wait(timeout: .seconds(60))  // past every wait of the test
        }
        #expect(held.wait(), "the second thread never got busy")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let d = SerialQueue(label: "d", pool: pool)
        let stop = TestFlag()
        let hops = TestCounter()
        let ranD = TestSemaphore()
        let posted = TestFlag()
        Self.startPingPong(a, b, hops: hops, until: stop) {
            if hops.value == 1_000 {
                d.async { ranD.signal() }
                posted.set()
            }
        }
        #expect(eventually { posted.isSet }, "the ping-pong did not get going")
        let ran = ranD.wait(timeout: Self.patience)
        let hopsWhenDRan = hops.value
        #expect(eventually { hops.value > hopsWhenDRan + 100 }, "the ping-pong stopped by itself")
        stop.set()
        release.signal()
        a.sync {}
        b.sync {}
        #expect(ran, "work in the chain's own run queue waited \(Self.patience) behind an endless chain")
    }

    /// Width 4, three ping-pongs whose hops also post, in order, to one shared queue s: with
    /// watchers taking fills (a debug turn outlasts the patience, so chains move between threads),
    /// each queue still runs one body at a time and s runs each chain's posts in their order.
    @Test func chainsThatMoveBetweenThreadsKeepOneBodyAtATimeAndFIFO() {
        let pool = WorkerPool(threads: 4, label: "atk-fifo")
        let s = SerialQueue(label: "s", pool: pool)
        let chains = 3
        let hopsPerChain = 2_000
        let inBody = (0..<(2 * chains)).map { _ in TestCounter() }
        let overlaps = TestCounter()
        let outOfOrder = TestCounter()
        let lastSeen = Mutex<[Int]>(Array(repeating: -1, count: chains))
        let done = TestSemaphore()
        for chain in 0..<chains {
            let queues = [SerialQueue(label: "a\(chain)", pool: pool), SerialQueue(label: "b\(chain)", pool: pool)]
            @Sendable func hop(_ k: Int) {
                let side = 2 * chain + k % 2
                if inBody[side].increment() != 1 { _ = overlaps.increment() }
                s.async {
                    lastSeen.withLock { seen in
                        if seen[chain] != k - 1 { _ = outOfOrder.increment() }
                        seen[chain] = k
                    }
                }
                if k + 1 < hopsPerChain {
                    queues[(k + 1) % 2].async { hop(k + 1) }
                } else {
                    done.signal()
                }
                _ = inBody[side].increment(by: -1)
            }
            queues[0].async { hop(0) }
        }
        for _ in 0..<chains { #expect(done.wait(), "a chain never ended") }
        s.sync {}
        #expect(overlaps.value == 0, "\(overlaps.value) bodies of one queue overlapped")
        #expect(outOfOrder.value == 0, "s ran \(outOfOrder.value) posts out of their order")
        #expect(lastSeen.withLock { $0 } == Array(repeating: hopsPerChain - 1, count: chains), "s missed posts")
    }

    // MARK: The idle pool after a ping-pong

    /// Context switches of this process's threads named `name` (voluntary + involuntary).
    static func contextSwitches(ofThreadsNamed name: String) -> [Int: Int] {
        var result: [Int: Int] = [:]
        guard let directory = opendir("/proc/self/task") else { return result }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let id = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int(id), Self.read("/proc/self/task/\(id)/comm").first == name else { continue }
            var switches = 0
            for line in Self.read("/proc/self/task/\(id)/status")
            where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                switches += Int(String(line.filter { $0.isNumber })) ?? 0
            }
            result[tid] = switches
        }
        return result
    }

    static func read(_ path: String) -> [String] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var lines: [String] = []
        var buffer = [CChar](repeating: 0, count: 512)
        while fgets(&buffer, 512, file) != nil {
            lines.append(String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return lines
    }

    /// After a ping-pong ends, every pool thread goes to sleep (none keeps watching or dozing),
    /// and then makes no wake-up at all: its context switches do not move over a window (any
    /// window; its length only gives a thread that wakes the time to show it).
    @Test(arguments: [2, 3])
    func theIdlePoolAfterAPingPongMakesNoWakeUps(width: Int) {
        let label = "atk-idle\(width)"
        let pool = WorkerPool(threads: width, label: label)
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let stop = TestFlag()
        let hops = TestCounter()
        Self.startPingPong(a, b, hops: hops, until: stop)
        #expect(eventually { hops.value > 20_000 }, "the ping-pong did not get going")
        stop.set()
        a.sync {}
        b.sync {}
        let asleep = eventually(timeout: .seconds(20)) { pool._idleThreadCount == width && pool._dozingThreadCount == 0 }
        #expect(asleep, "after the ping-pong: \(pool._idleThreadCount) of \(width) threads idle, \(pool._dozingThreadCount) dozing")
        let before = Self.contextSwitches(ofThreadsNamed: label)
        #expect(before.count == width, "found \(before.count) threads named \(label)")
        _ = TestSemaphore().wait(timeout: .milliseconds(300))  // a window, not a measurement
        let after = Self.contextSwitches(ofThreadsNamed: label)
        #expect(after == before, "idle pool threads woke: context switches \(before) → \(after)")
        #expect(pool._idleThreadCount == width, "a thread left the idle list of an idle pool")
    }

    // MARK: Shutdown, release, sync, suspension of a queue in a next slot

    /// x's item makes c runnable (its thread's `next` slot), then holds its thread until `gate`.
    static func leaveInNextSlot(
        of x: SerialQueue, _ post: @escaping @Sendable () -> Void, gate: TestSemaphore
    ) -> TestSemaphore {
        let posted = TestSemaphore()
        x.async {
            post()
            posted.signal()
            _ = Self.spin(until: gate)
        }
        #expect(posted.wait(), "x's item never ran")
        return posted
    }

    @Test(arguments: [ShutdownMode.drain, .cancelPending])
    func poolShutdownWhileAFillWaitsBehindALongItem(mode: ShutdownMode) {
        let label = "atk-shut"
        let pool = WorkerPool(threads: 2, label: label)
        let x = SerialQueue(label: "x", pool: pool)
        let c = SerialQueue(label: "c", pool: pool)
        let gate = TestSemaphore()
        let ranC = TestSemaphore()
        _ = Self.leaveInNextSlot(of: x, { c.async { ranC.signal() } }, gate: gate)
        let shutDown = TestSemaphore()
        OwnThread.start { pool.shutdown(mode); shutDown.signal() }
        if mode == .drain {
            #expect(ranC.wait(timeout: Self.patience), "c waited behind x's item during a draining shutdown with a thread free")
        }
        gate.signal()
        #expect(shutDown.wait(timeout: Self.patience), "pool shutdown (\(mode)) never returned")
        #expect(eventually { !currentThreadNames().contains(label) }, "pool threads stayed after shutdown")
    }

    /// The last reference to c goes while c waits in the `next` slot of x's thread: from another
    /// thread (the release waits until c drained: a free thread must take it), and inside x's item
    /// itself (the release blocks x's thread: c leaves the slot, a stand-in runs it).
    @Test(arguments: [false, true])
    func releaseOfAQueueWaitingInANextSlot(insideTheItem: Bool) {
        let pool = WorkerPool(threads: insideTheItem ? 1 : 2, label: "atk-rel")
        let x = SerialQueue(label: "x", pool: pool)
        let holder = Mutex<SerialQueue?>(SerialQueue(label: "c", pool: pool))
        let gate = TestSemaphore()
        let ranC = TestFlag()
        let released = TestSemaphore()
        _ = Self.leaveInNextSlot(of: x, {
            holder.withLock { $0!.async { ranC.set() } }
            if insideTheItem {
                let last = holder.withLock { queue in defer { queue = nil }; return queue }
                _ = consume last  // waits on this pool thread for c to drain
                released.signal()
            }
        }, gate: gate)
        if !insideTheItem {
            OwnThread.start {
                let last = holder.withLock { queue in defer { queue = nil }; return queue }
                _ = consume last
                released.signal()
            }
        }
        let returned = released.wait(timeout: Self.patience)
        gate.signal()
        #expect(returned, "releasing c waited \(Self.patience) while c sat in a next slot behind x's item")
        #expect(ranC.isSet, "c's work did not run before its release returned")
        x.sync {}
    }

    /// sync into c while c waits in the `next` slot of x's thread: from outside, from another
    /// pooled queue (a pool thread that blocks), and from x's item itself (c's earlier work runs
    /// first: FIFO); the last also on one thread (the blocking wrapper's stand-in runs c).
    @Test(arguments: zip(["outside", "otherQueue", "sameItem", "sameItem"], [2, 2, 2, 1]))
    func syncIntoAQueueWaitingInANextSlot(from caller: String, width: Int) {
        let pool = WorkerPool(threads: width, label: "atk-sync")
        let x = SerialQueue(label: "x", pool: pool)
        let y = SerialQueue(label: "y", pool: pool)
        let c = SerialQueue(label: "c", pool: pool)
        let order = Mutex<[String]>([])
        let gate = TestSemaphore()
        let synced = TestSemaphore()
        _ = Self.leaveInNextSlot(of: x, {
            c.async { order.withLock { $0.append("async") } }
            if caller == "sameItem" {
                c.sync { order.withLock { $0.append("sync") } }
                synced.signal()
            }
        }, gate: gate)
        switch caller {
        case "outside": OwnThread.start { c.sync { order.withLock { $0.append("sync") } }; synced.signal() }
        case "otherQueue": y.async { c.sync { order.withLock { $0.append("sync") } }; synced.signal() }
        default: break
        }
        let returned = synced.wait(timeout: Self.patience)
        gate.signal()
        #expect(returned, "c.sync from \(caller) waited \(Self.patience) behind x's item (c in its next slot), width \(width)")
        #expect(order.withLock { $0 } == ["async", "sync"], "c ran \(order.withLock { $0 })")
        x.sync {}
    }

    /// c, waiting in the `next` slot of x's thread, is suspended by x's item: its work does not
    /// start until the resume (a free thread that takes c finds it suspended), and runs after it
    /// while x's item still holds its thread.
    ///
    /// A free thread may take c after the patience (5 µs) and before `suspend()`: under
    /// ThreadSanitizer the two calls were further apart than that (CI, 2026-11-29), and c's work
    /// rightly ran first. So only a start after `suspend()` returned and before the resume counts.
    @Test func aSuspendedQueueInANextSlotWaitsForItsResume() {
        let pool = WorkerPool(threads: 2, label: "atk-susp")
        let x = SerialQueue(label: "x", pool: pool)
        let c = SerialQueue(label: "c", pool: pool)
        let suspended = TestFlag()
        let resumed = TestFlag()
        let ranEarly = TestFlag()
        let ranC = TestSemaphore()
        let sawIt = TestFlag()
        let done = TestSemaphore()
        x.async {
            c.async {
                if suspended.isSet && !resumed.isSet { ranEarly.set() }
                ranC.signal()
            }
            c.suspend()
            suspended.set()
            // Longer than the patience many times over: a free thread takes c meanwhile.
            _ = TestSemaphore().wait(timeout: .milliseconds(20))
            resumed.set()
            c.resume()
            if Self.spin(until: ranC) { sawIt.set() }
            done.signal()
        }
        #expect(done.wait(), "x's item never ended")
        #expect(!ranEarly.isSet, "c's work started while c was suspended")
        #expect(sawIt.isSet, "c's work, resumed, waited behind x's item with a thread free")
    }

    /// Width 3: a thread blocks in a `sync` (a stand-in starts), then comes back and holds its
    /// thread, so one free thread is surplus and retires, while x's item leaves c in its `next`
    /// slot: the one free thread left must take c (the watch is handed on as a thread retires).
    @Test func aFillWaitsWhileASurplusStandInRetires() {
        let pool = WorkerPool(threads: 3, label: "atk-retire")
        let y = SerialQueue(label: "y", pool: pool)
        let z = SerialQueue(label: "z", pool: pool)
        let x = SerialQueue(label: "x", pool: pool)
        let c = SerialQueue(label: "c", pool: pool)
        let zGate = TestSemaphore()
        let zBusy = TestSemaphore()
        let ranC = TestSemaphore()
        let yDone = TestSemaphore()
        let xDone = TestSemaphore()
        let sawIt = TestFlag()
        z.async {
            zBusy.signal()
            _ = zGate.wait(timeout: Self.patience)
        }
        #expect(zBusy.wait(), "z never got busy")
        let yBlocked = TestSemaphore()
        y.async {
            yBlocked.signal()
            z.sync {}  // blocks: a stand-in starts
            _ = Self.spin(until: xDone)  // back, and holds its thread: the stand-in is surplus
            yDone.signal()
        }
        #expect(yBlocked.wait(), "y never ran")
        #expect(eventually { currentThreadNames().filter { $0 == "atk-retire" }.count == 4 }, "no stand-in started")
        zGate.signal()
        x.async {
            c.async { ranC.signal() }
            if Self.spin(until: ranC) { sawIt.set() }
            xDone.signal(2)
        }
        #expect(xDone.wait(timeout: .seconds(30)), "x's item never ended")
        #expect(yDone.wait(), "y's item never ended")
        #expect(sawIt.isSet, "c waited behind x's item while a surplus stand-in retired and a thread was free")
    }
}

/// A plain thread running `body` (detached): for calls that block (shutdown, release, sync). Not
/// a task: under ThreadSanitizer the test bodies block the cooperative threads (the suite's trait
/// stands aside there), and a detached task never started (shutdown never called: 3 tests failed).
enum OwnThread {
    static func start(_ body: @escaping @Sendable () -> Void) {
        Thread.detachNewThread { body() }
    }
}
