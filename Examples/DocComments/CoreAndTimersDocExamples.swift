import SerialRuntime
import SerialTesting
import Testing

// The examples of the doc comments in SerialCore, SerialTimers and SerialTesting, each a
// `// example:` region that scripts/check-readme-examples.sh compares with the comment.

@Suite("Doc examples: SerialCore, SerialTimers, SerialTesting")
struct CoreAndTimersDocExamples {
    @Test func serialQueue() {
        // example: SerialQueue
        let queue = SerialQueue(label: "db")
        queue.async { print("on the worker") }
        let rows = queue.sync { 42 }          // on this thread, after the async work
        // end example
        #expect(rows == 42)
    }

    @Test func timingWheel() {
        // example: TimingWheel
        var wheel = TimingWheel<String>()
        let handle = wheel.insert("retry", at: 130)
        wheel.insert("ping", at: 5)
        let next = wheel.nextExpiry             // tick 5: the next tick at which advancing has work
        let expired = wheel.advance(to: 100)     // ["ping"]
        let cancelled = wheel.cancel(handle)     // "retry"; cancelling again returns nil
        // end example
        #expect(next == 5)
        #expect(expired == ["ping"])
        #expect(cancelled == "retry")
        #expect(wheel.cancel(handle) == nil)
    }

    @Test func timerService() throws {
        // example: TimerService
        let queue = SerialQueue(label: "timers")
        let timers = TimerService(scheduler: queue)
        let handle = try timers.schedule(after: .seconds(2)) { print("fired on", queue) }
        handle.cancel()   // true: it will not fire
        // end example
        timers.stop()
    }

    @Test func virtualScheduler() throws {
        // example: VirtualScheduler
        let scheduler = VirtualScheduler()
        let fired = CallbackRecorder<Void>("fired")
        try scheduler.schedule(after: .seconds(5)) { fired.record() }
        scheduler.advance(by: .seconds(4))   // nothing: fired.count == 0
        scheduler.advance(by: .seconds(1))   // fires, with scheduler.now == start + 5 s
        // end example
        #expect(fired.count == 1)
    }

    @Test func seededRandom() {
        // example: SeededRandom
        var random = SeededRandom(seed: 42)
        let delay = Int.random(in: 0..<100, using: &random)   // the same on every run with seed 42
        // end example
        var again = SeededRandom(seed: 42)
        #expect(delay == Int.random(in: 0..<100, using: &again))
    }

    @Test func callbackRecorder() throws {
        // example: CallbackRecorder
        let fired = CallbackRecorder<String>("delayed work")
        let queue = SerialQueue(label: "work")
        queue.asyncAfter(delay: .milliseconds(20)) { fired.record("first") }
        queue.asyncAfter(delay: .milliseconds(40)) { fired.record("second") }
        let values = try fired.wait(forCount: 2, timeout: .seconds(10))   // on the test's thread
        #expect(values == ["first", "second"])
        // end example
    }
}

func timeoutManagerDocExample() throws {
    // example: TimeoutManager
    let callbacks = SerialQueue(label: "callbacks")
    let manager = TimeoutManager<String>(scheduler: callbacks, workerCount: 2)
    try manager.run(taskKey: "host-1", timeout: .milliseconds(500)) {
        try fetchStatus("host-1")                 // blocking; runs on a worker queue
    } completion: { outcome in
        print(outcome)                            // on `callbacks`: completed(...) or timedOut
    }
    // end example
}

// example: ActorHops
actor Ledger {
    let queue = SerialQueue(label: "ledger")
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
}
// end example
