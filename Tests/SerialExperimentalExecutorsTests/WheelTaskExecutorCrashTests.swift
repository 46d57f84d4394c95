import SerialCore
import SerialExperimentalExecutors
import SerialTestSupport
import Testing

/// Traps around WheelTaskExecutor, run in a child process; each checks the message.
@Suite("WheelTaskExecutor traps")
struct WheelTaskExecutorCrashTests {
    /// Its pool's task jobs run as the executor: a task that prefers the bare pool would run under
    /// another identity than the one it was given.
    @Test func aTaskThatPrefersTheWrappedPoolTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let executor = WheelTaskExecutor(threads: 1, label: "wrapped")
            Task(executorPreference: executor.pool) {}
            withWatchdog(timeout: .seconds(10), "a task preferring a wrapped pool did not trap") {
                _ = TestSemaphore().wait(timeout: .seconds(60))  // never signalled: the trap or the watchdog ends it
            }
        }.map {
            #expect($0.standardErrorText.contains(
                "WorkerPool \"wrapped\": a task that prefers this pool was started, but the pool runs the task jobs "
                    + "of WheelTaskExecutor(\"wrapped\", threads: 1)"))
        }
    }
}

/// MainRunLoopExecutor's isolation check, run in a child process.
@Suite("MainRunLoopExecutor traps")
struct MainRunLoopExecutorCrashTests {
    @Test func checkIsolatedOffTheRunLoopsThreadTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            MainRunLoopExecutor().checkIsolated()  // no thread runs its loop
        }.map {
            #expect($0.standardErrorText.contains(
                "MainRunLoopExecutor: checkIsolated failed: the caller is not on the thread running its run loop"))
        }
    }
}
