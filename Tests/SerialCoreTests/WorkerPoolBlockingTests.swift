import SerialCore
import SerialTestSupport
import Testing

/// Every wait the library makes on a pool thread gets a stand-in thread, so work that waits for
/// a queue of the same pool never waits for the blocked thread itself. Each scenario would hang
/// without it: a watchdog ends the process with the scenario's name instead.
@Suite("WorkerPool blocking waits", .onItsOwnThread)  // waits for pool work: off the cooperative threads
struct WorkerPoolBlockingTests {
    @Test(arguments: [1, 4])
    func releasingADedicatedQueueOnAPoolThreadLetsItsWorkWaitForThePool(width: Int) {
        let pool = WorkerPool(threads: width, label: "blk-release")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let done = TestSemaphore()
        let ran = TestFlag()
        withWatchdog(timeout: .seconds(20), "releasing a dedicated queue on a \(width)-thread pool's thread hung") {
            a.async {
                b.async {}  // b is runnable: only a pool thread can run it
                do {
                    let d = SerialQueue(label: "d")
                    d.async { b.sync { ran.set() } }
                    // Released here: the release joins d's worker, whose work waits for b's turn.
                }
                done.signal()
            }
            #expect(done.wait(), "the release never returned")
        }
        #expect(ran.isSet, "d's work never ran its sync on b")
    }

    @Test(arguments: [1, 4])
    func shuttingDownAPoolFromAnotherPoolsThreadLetsItsWorkWaitForThatPool(width: Int) {
        let pool = WorkerPool(threads: width, label: "blk-pool")
        let a = SerialQueue(label: "a", pool: pool)
        let b = SerialQueue(label: "b", pool: pool)
        let done = TestSemaphore()
        let ran = TestFlag()
        withWatchdog(timeout: .seconds(20), "a pool's shutdown on another \(width)-thread pool's thread hung") {
            a.async {
                let other = WorkerPool(threads: 1, label: "blk-other")
                let q = SerialQueue(label: "q", pool: other)
                b.async {}
                q.async { b.sync { ran.set() } }  // needs a thread of the first pool
                other.shutdown()  // waits for q to drain, on the first pool's thread
                done.signal()
            }
            #expect(done.wait(), "the other pool's shutdown never returned")
        }
        #expect(ran.isSet, "q's work never ran its sync on b")
    }
}
