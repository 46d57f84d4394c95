import SerialCore
import SerialTestSupport
import Testing

/// Locality: a queue made runnable by a pool thread's own turn runs on that thread after the turn,
/// even while another pool thread is free; a free thread takes it only after it waited
/// `WorkerPool.nextPatience` (the owner's item ran long: `WorkerPoolWorkConservationTests`).
@Suite("WorkerPool locality")
struct WorkerPoolLocalityTests {
    /// Two queues posting to each other on a pool of 2 threads: the chain stays on one thread. A
    /// hop moves to the other thread only when the posting thread held the queue in its `next`
    /// slot for the whole patience (it was preempted, on a loaded machine), and the chain then
    /// stays there: so moves are rare, not one per hop. Before the pool kept a hop local while a
    /// thread was free, every hop moved (the free thread took it from the run queue).
    @Test func aChainOfHopsStaysOnItsThreadWhileTheOtherThreadIsFree() {
        let pool = WorkerPool(threads: 2, label: "locality")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let hops = 10_000
        let moves = TestCounter()
        let done = TestSemaphore()
        @Sendable func hop(_ index: Int, from thread: UInt) {
            let here = CurrentThreadID.value
            if here != thread { _ = moves.increment() }
            guard index < hops else { return done.signal() }
            (index % 2 == 0 ? b : a).async { hop(index + 1, from: here) }
        }
        a.async { hop(0, from: CurrentThreadID.value) }
        #expect(done.wait(), "the chain of \(hops) hops never ended")
        #expect(
            moves.value <= hops / 10,
            "\(moves.value) of \(hops) hops moved to the other pool thread (a local hop moves only when its thread held it for \(WorkerPool.nextPatience))"
        )
    }
}
