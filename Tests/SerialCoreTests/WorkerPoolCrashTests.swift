import Glibc
import SerialCore
import SerialTestSupport
import Testing

/// Every trap of WorkerPool, run in a child process; each checks the message names the pool.
@Suite("WorkerPool traps")
struct WorkerPoolCrashTests {
    @Test func aPoolOfNoThreadsTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = WorkerPool(threads: 0, label: "empty-pool")
        }.map { #expect($0.standardErrorText.contains("WorkerPool \"empty-pool\": threads must be at least 1, got 0")) }
    }

    @Test func aTaskJobAfterThePoolStoppedTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let pool = WorkerPool(threads: 1, label: "stopped-pool")
            pool.shutdown()
            Task(executorPreference: pool) {}
            withWatchdog(timeout: .seconds(10), "a job for a stopped pool did not trap") {
                _ = TestSemaphore().wait(timeout: .seconds(60))  // never signalled: the trap or the watchdog ends it
            }
        }.map { #expect($0.standardErrorText.contains("WorkerPool \"stopped-pool\": a task job arrived after the pool stopped")) }
    }

    @Test func shutdownFromThePoolsOwnThreadTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let pool = WorkerPool(threads: 1, label: "self-stop")
            let queue = SerialQueue(label: "q", pool: pool)
            queue.sync {}
            queue.async { pool.shutdown() }
            queue.shutdown()
        }.map { #expect($0.standardErrorText.contains("WorkerPool \"self-stop\": shutdown() called from work running on one of its own threads")) }
    }

    @Test func shutdownInsideASyncBodyOfOneOfItsQueuesTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let pool = WorkerPool(threads: 1, label: "sync-stop")
            let queue = SerialQueue(label: "inner", pool: pool)
            // Without the trap this would hang: the watchdog turns that into a different message.
            withWatchdog(timeout: .seconds(10), "WorkerPool.shutdown() inside a sync body hung") {
                queue.sync { pool.shutdown() }
            }
        }.map {
            #expect($0.standardErrorText.contains(
                "WorkerPool \"sync-stop\": shutdown() called inside a sync body of its queue \"inner\""))
        }
    }

    @Test func aQueueOnAShutDownPoolTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let pool = WorkerPool(threads: 1, label: "closed-pool")
            pool.shutdown()
            _ = SerialQueue(label: "late", pool: pool)
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"late\": cannot be created on WorkerPool \"closed-pool\", which is shut down"))
        }
    }

    @Test(.enabled(if: Sanitizers.addressSpaceCanBeCapped, "a sanitizer's runtime needs address space that the cap takes away"))
    func makeReportsAPoolWhoseThreadsCannotStart() async {
        await #expect(processExitsWith: .success) {
            limitAddressSpaceSoNoThreadStackFits()
            do throws(SerialQueueError) {
                _ = try WorkerPool.make(threads: 2, label: "no-threads")
                exit(3)
            } catch {
                guard case .poolThreadStartFailed(let pool, let errno, _) = error, pool == "no-threads", errno == EAGAIN
                else { exit(4) }
                exit(0)
            }
        }
    }
}
