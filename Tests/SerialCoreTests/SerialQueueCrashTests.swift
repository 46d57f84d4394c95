import Glibc
import SerialCore
import SerialTestSupport
import Testing

/// Every trap of SerialQueue, run in a child process; each checks the message names the queue.
@Suite("SerialQueue traps")
struct SerialQueueCrashTests {
    @Test(arguments: QueueMode.allCases) func reentrantSyncFromAsyncWorkTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "reentrant-async")
            queue.async { queue.sync {} }
            queue.shutdown()
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"reentrant-async\": sync called from work already running on it"))
        }
    }

    @Test(arguments: QueueMode.allCases) func reentrantSyncInsideSyncBodyTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "reentrant-sync")
            queue.sync { queue.sync {} }
        }.map { #expect($0.standardErrorText.contains("\"reentrant-sync\" → \"reentrant-sync\"")) }
    }

    @Test(arguments: QueueMode.allCases) func syncChainBackToAQueueAlreadyHeldTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let a = mode.queue(label: "chain-a")
            let b = mode.queue(label: "chain-b")
            a.sync { b.sync { a.sync {} } }
        }.map { #expect($0.standardErrorText.contains("\"chain-a\" → \"chain-b\" → \"chain-a\"")) }
    }

    @Test(arguments: QueueMode.allCases) func resumeWithoutSuspendTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "over-resume")
            queue.suspend()
            queue.resume()
            queue.resume()
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"over-resume\": resume() called more often than suspend()"))
        }
    }

    @Test(arguments: QueueMode.allCases) func asyncAfterShutdownTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "closed-async")
            queue.shutdown()
            queue.async {}
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"closed-async\": async after shutdown")) }
    }

    @Test(arguments: QueueMode.allCases) func syncAfterShutdownTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "closed-sync")
            queue.shutdown()
            queue.sync {}
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"closed-sync\": sync after shutdown")) }
    }

    @Test(arguments: QueueMode.allCases) func delayedWorkAfterShutdownTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "closed-later")
            queue.shutdown(.cancelPending)
            queue.asyncAfter(delay: .seconds(1)) {}
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"closed-later\": asyncAfter after shutdown")) }
    }

    @Test(arguments: QueueMode.allCases) func releasingASuspendedQueueTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            var queue: SerialQueue? = mode.queue(label: "suspended-drop")
            queue!.suspend()
            queue = nil
            _ = queue
        }.map {
            #expect($0.standardErrorText.contains("SerialQueue \"suspended-drop\": last reference released while suspended"))
        }
    }

    @Test(arguments: QueueMode.allCases) func checkIsolatedOutsideTheQueueTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "not-here")
            queue.checkIsolated()
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"not-here\": checkIsolated failed")) }
    }

    @Test(arguments: QueueMode.allCases) func aCycleOfSyncCallsAcrossThreadsTrapsNamingIt(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let a = mode.queue(label: "cycle-a")
            let b = mode.queue(label: "cycle-b")
            let bothInside = Barrier(parties: 2)
            a.async {
                bothInside.arriveAndWait()
                b.sync {}
            }
            b.async {
                bothInside.arriveAndWait()
                a.sync {}
            }
            // One of the two waits closes the cycle and traps; the watchdog fails a hang instead.
            withWatchdog(timeout: .seconds(20), "the sync cycle was not detected") {
                a.sync {}
            }
        }.map {
            let text = $0.standardErrorText
            #expect(text.contains("sync would deadlock"))
            #expect(text.contains("holds \"cycle-a\" and waits for \"cycle-b\""))
            #expect(text.contains("holds \"cycle-b\" and waits for \"cycle-a\""))
        }
    }

    /// Work on `a` waits for room in full `b` while work on `b` waits for room in full `a`: room
    /// comes only when each queue's running work ends, so neither ever gets it.
    @Test(arguments: QueueMode.allCases) func aCycleOfWaitsForRoomAcrossThreadsTrapsNamingIt(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let a = mode.queue(label: "room-a", maximumQueued: 1)
            let b = mode.queue(label: "room-b", maximumQueued: 1)
            let started = TestSemaphore()
            let go = Barrier(parties: 3)
            a.async {
                started.signal()
                go.arriveAndWait()
                b.async {}  // b is full: waits for room
            }
            b.async {
                started.signal()
                go.arriveAndWait()
                a.async {}  // a is full: waits for room
            }
            guard started.wait(timeout: .seconds(20)), started.wait(timeout: .seconds(20)) else { exit(3) }
            a.async {}  // both running work items started: one waiting item fills each queue
            b.async {}
            go.arriveAndWait()
            // One of the two waits closes the cycle and traps; the watchdog fails a hang instead.
            withWatchdog(timeout: .seconds(20), "the cycle of waits for room was not detected") {
                _ = TestSemaphore().wait(timeout: .seconds(60))  // never signalled: the trap or the watchdog ends it
            }
        }.map {
            let text = $0.standardErrorText
            #expect(text.contains("async would deadlock"))
            #expect(text.contains("holds \"room-a\" and waits for room in \"room-b\""))
            #expect(text.contains("holds \"room-b\" and waits for room in \"room-a\""))
        }
    }

    @Test(arguments: QueueMode.allCases) func aCycleOfASyncCallAndAWaitForRoomTrapsNamingIt(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let a = mode.queue(label: "mixed-a", maximumQueued: 1)
            let b = mode.queue(label: "mixed-b")
            let started = TestSemaphore()
            let go = Barrier(parties: 3)
            a.async {
                started.signal()
                go.arriveAndWait()
                b.sync {}  // b's work is blocked: waits for its turn
            }
            b.async {
                started.signal()
                go.arriveAndWait()
                a.async {}  // a is full: waits for room
            }
            guard started.wait(timeout: .seconds(20)), started.wait(timeout: .seconds(20)) else { exit(3) }
            a.async {}
            go.arriveAndWait()
            withWatchdog(timeout: .seconds(20), "the cycle of a sync call and a wait for room was not detected") {
                _ = TestSemaphore().wait(timeout: .seconds(60))  // never signalled: the trap or the watchdog ends it
            }
        }.map {
            let text = $0.standardErrorText
            #expect(text.contains("would deadlock"))
            #expect(text.contains("holds \"mixed-a\" and waits for \"mixed-b\""))
            #expect(text.contains("holds \"mixed-b\" and waits for room in \"mixed-a\""))
        }
    }

    @Test(.enabled(if: Sanitizers.addressSpaceCanBeCapped, "a sanitizer's runtime needs address space that the cap takes away"))
    func aThreadThatCannotStartTrapsSayingWhy() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            limitAddressSpaceSoNoThreadStackFits()
            _ = SerialQueue(label: "no-thread")
        }.map {
            let text = $0.standardErrorText
            #expect(text.contains("SerialQueue \"no-thread\": cannot start its worker thread: pthread_create failed with errno"))
            #expect(text.contains("Use SerialQueue.make(label:)"))
        }
    }

    @Test(.enabled(if: Sanitizers.addressSpaceCanBeCapped, "a sanitizer's runtime needs address space that the cap takes away"))
    func makeReportsAThreadThatCannotStartAsAnError() async {
        await #expect(processExitsWith: .success) {
            limitAddressSpaceSoNoThreadStackFits()
            do throws(SerialQueueError) {
                _ = try SerialQueue.make(label: "no-thread")
                exit(3)  // created a thread it should not have been able to
            } catch {
                guard case .threadStartFailed(let label, let errno, let reason) = error,
                    label == "no-thread", errno == EAGAIN, reason.contains("limit")
                else { exit(4) }
                exit(0)
            }
        }
    }

    @Test(arguments: QueueMode.allCases) func aProducerWaitingForRoomWhenTheQueueShutsDownTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            let queue = mode.queue(label: "full-then-closed", maximumQueued: 1)
            queue.suspend()
            queue.async {}
            let closer = mode.queue(label: "closer")
            closer.async {
                _ = eventually { queue._roomWaiters == 1 }
                queue.shutdown(.cancelPending)
            }
            queue.async {}  // waits for room, then finds the queue shut down
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"full-then-closed\": async after shutdown")) }
    }

    @Test(arguments: QueueMode.allCases) func aBoundBelowOneTraps(mode: QueueMode) async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [mode] in
            _ = mode.queue(label: "no-room", maximumQueued: 0)
        }.map { #expect($0.standardErrorText.contains("SerialQueue \"no-room\": maximumQueued 0 must be at least 1")) }
    }
}

/// Caps this process's address space just above what it maps now, so a new thread's stack
/// (8 MiB by default) cannot be mapped and `pthread_create` fails with EAGAIN. Child processes only.
func limitAddressSpaceSoNoThreadStackFits() {
    var pages = 0
    if let file = fopen("/proc/self/statm", "r") {
        var buffer = [CChar](repeating: 0, count: 64)
        if fgets(&buffer, 64, file) != nil {
            pages = Int(String(decoding: buffer.prefix { $0 != 0 && $0 != 32 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) ?? 0
        }
        fclose(file)
    }
    let bytes = rlim_t(pages * Int(sysconf(Int32(_SC_PAGESIZE))) + 2 * 1024 * 1024)
    var limit = rlimit(rlim_cur: bytes, rlim_max: bytes)
    if setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) != 0 { exit(5) }
}
