import SerialCore
import SerialExperimentalExecutors
import SerialTestSupport
import Testing

/// MainRunLoopExecutor runs jobs on the thread that calls `run()`, in order, until `stop()`.
@Suite("MainRunLoopExecutor")
struct MainRunLoopExecutorTests {
    /// An actor on the run loop, as the main actor is under PoolExecutorFactory.
    actor OnLoop {
        let loop: MainRunLoopExecutor
        var order: [Int] = []
        init(loop: MainRunLoopExecutor) { self.loop = loop }
        nonisolated var unownedExecutor: UnownedSerialExecutor { self.loop.asUnownedSerialExecutor() }
        func record(_ index: Int) -> UInt {
            self.loop.checkIsolated()
            self.order.append(index)
            return CurrentThread.id
        }
    }

    @Test func jobsRunOnTheThreadRunningTheLoopInOrderUntilStopped() async throws {
        let loop = MainRunLoopExecutor()
        let loopThread = TestCounter()
        let ended = TestSemaphore()
        Task {
            await offThePool {  // a thread of its own runs the loop, as the main thread would
                _ = loopThread.increment(by: Int(bitPattern: CurrentThread.id))
                try? loop.run()
                ended.signal()
            }
        }
        let actor = OnLoop(loop: loop)
        var threads: Set<UInt> = []
        for index in 0..<20 { threads.insert(await actor.record(index)) }
        let expected: Set<UInt> = [UInt(bitPattern: loopThread.value)]
        #expect(threads == expected, "jobs ran on \(threads.count) threads, not only the loop's")
        #expect(await actor.order == Array(0..<20))
        loop.stop()
        #expect(await offThePool { ended.wait(timeout: .seconds(10)) }, "run() did not return after stop()")
    }
}
