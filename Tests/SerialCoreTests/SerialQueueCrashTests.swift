import SerialCore
import SerialTestSupport
import Testing

/// Every trap of SerialQueue, run in a child process; each checks the message names the queue.
@Suite("SerialQueue traps")
struct SerialQueueCrashTests {
    @Test func reentrantSyncFromAsyncWorkTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "reentrant-async")
            queue.async { queue.sync {} }
            queue.shutdown()
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"reentrant-async\": sync called from work already running on it"))
        }
    }

    @Test func reentrantSyncInsideSyncBodyTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "reentrant-sync")
            queue.sync { queue.sync {} }
        }.map { #expect($0.standardErrorText.contains("\"reentrant-sync\" → \"reentrant-sync\"")) }
    }

    @Test func syncChainBackToAQueueAlreadyHeldTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let a = SerialQueue(label: "chain-a")
            let b = SerialQueue(label: "chain-b")
            a.sync { b.sync { a.sync {} } }
        }.map { #expect($0.standardErrorText.contains("\"chain-a\" → \"chain-b\" → \"chain-a\"")) }
    }

    @Test func resumeWithoutSuspendTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "over-resume")
            queue.suspend()
            queue.resume()
            queue.resume()
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"over-resume\": resume() called more often than suspend()"))
        }
    }

    @Test func asyncAfterShutdownTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "closed-async")
            queue.shutdown()
            queue.async {}
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"closed-async\": async after shutdown")) }
    }

    @Test func syncAfterShutdownTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "closed-sync")
            queue.shutdown()
            queue.sync {}
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"closed-sync\": sync after shutdown")) }
    }

    @Test func delayedWorkAfterShutdownTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "closed-later")
            queue.shutdown(.cancelPending)
            queue.asyncAfter(delay: .seconds(1)) {}
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"closed-later\": asyncAfter after shutdown")) }
    }

    @Test func releasingASuspendedQueueTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var queue: SerialQueue? = SerialQueue(label: "suspended-drop")
            queue!.suspend()
            queue = nil
            _ = queue
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"suspended-drop\": last reference released while suspended"))
        }
    }

    @Test func checkIsolatedOutsideTheQueueTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = SerialQueue(label: "not-here")
            queue.checkIsolated()
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"not-here\": checkIsolated failed")) }
    }
}
