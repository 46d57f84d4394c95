/// The threads waiting for a queue — in a busy queue's `sync`, or in a full bounded queue's
/// `async` for room — and the queue each waits for: enough to see a cycle of waits across
/// threads (work on `a` calls `b.sync` while work on `b` calls `a.sync`, or each waits for room
/// in the other) the moment it closes, and trap naming it, instead of hanging both threads forever.
///
/// Both waits end only when the queue's running work ends: a `sync` turn comes after it, and room
/// comes when the worker next takes the FIFO, which it does between pieces of work. So a thread
/// blocked in either waits for whoever holds that queue. A cycle is made only of waiting threads,
/// and a waiting thread holds exactly the queues on its `CurrentQueueStack` (it is blocked inside
/// their work). So when a thread starts to wait for
/// queue Q, the walk is: which waiting thread holds Q? what does it wait for? who holds that?…
/// until it reaches a queue the new waiter holds itself (a cycle) or a queue no waiting thread
/// holds (no cycle). Registering and walking happen under one lock, so of the threads closing a
/// cycle, the last to start waiting sees it. Only the waiting path pays: an idle `sync` and
/// `async` never come here.
///
/// - Invariant: a thread's stack is read by others only while it is registered here; it
///   changes its stack only before registering and after unregistering (both under the lock).
enum QueueWaitGraph {
    /// What a thread waits for in a queue.
    enum Wait {
        /// Its turn, in `sync`.
        case turn
        /// Room in the FIFO, in a bounded queue's `async`.
        case room
    }

    private struct Waiter {
        let stack: Unmanaged<CurrentQueueStack>
        let queue: Unmanaged<QueueCore>
        let wait: Wait
    }

    private static let waiters = LockedValue<[Waiter]>([])

    /// Records that the calling thread waits for `queue`, trapping if that closes a cycle.
    static func beginWaiting(_ stack: CurrentQueueStack, for queue: QueueCore, _ wait: Wait) {
        let cycle: [Waiter]? = Self.waiters.withLock { waiters in
            let me = Waiter(stack: .passUnretained(stack), queue: .passUnretained(queue), wait: wait)
            waiters.append(me)
            return Self.cycle(closedBy: me, in: waiters)
        }
        if let cycle {
            Misuse.waitDeadlock(operation: wait == .turn ? "sync" : "async", cycle: Self.describe(cycle))
        }
    }

    /// The calling thread has its turn (or gave up waiting).
    static func endWaiting(_ stack: CurrentQueueStack) {
        Self.waiters.withLock { waiters in
            if let index = waiters.lastIndex(where: { $0.stack.toOpaque() == Unmanaged.passUnretained(stack).toOpaque() }) {
                waiters.remove(at: index)
            }
        }
    }

    /// The chain of waits from `start` back to it, if there is one. Allocates nothing unless it
    /// finds one: every waiting `sync` comes here.
    private static func cycle(closedBy start: Waiter, in waiters: [Waiter]) -> [Waiter]? {
        guard let length = Self.cycleLength(from: start, in: waiters) else { return nil }
        var chain = [start]
        var wanted = start.queue.toOpaque()
        for _ in 1..<length {
            let holder = Self.holder(of: wanted, in: waiters)!
            chain.append(holder)
            wanted = holder.queue.toOpaque()
        }
        return chain
    }

    /// How many threads the cycle through `start` has, or `nil` when the waits do not lead back.
    private static func cycleLength(from start: Waiter, in waiters: [Waiter]) -> Int? {
        var wanted = start.queue.toOpaque()
        // Each step moves to another waiting thread; more steps than waiters means a cycle that
        // does not pass through `start` (it was reported when it closed).
        for step in 0..<waiters.count {
            guard let holder = Self.holder(of: wanted, in: waiters) else { return nil }
            if holder.stack.toOpaque() == start.stack.toOpaque() { return step + 1 }
            wanted = holder.queue.toOpaque()
        }
        return nil
    }

    /// The waiting thread that holds the queue whose core is at `queue`.
    private static func holder(of queue: UnsafeMutableRawPointer, in waiters: [Waiter]) -> Waiter? {
        waiters.first { $0.stack.takeUnretainedValue().holds(address: queue) }
    }

    /// "thread 123 "name" holds "a" and waits for "b" → thread 456 … holds "b" and waits for room
    /// in "a"".
    private static func describe(_ cycle: [Waiter]) -> String {
        cycle.map { waiter in
            let stack = waiter.stack.takeUnretainedValue()
            let id = stack.systemThreadID
            let held = stack.labels.map { "\"\($0)\"" }.joined(separator: ", ")
            let what = waiter.wait == .turn ? "" : "room in "
            return "thread \(id) \"\(CurrentThread.name(ofSystemID: id))\" holds \(held) and waits for \(what)"
                + "\"\(waiter.queue.takeUnretainedValue().label)\""
        }.joined(separator: " → ")
    }
}
