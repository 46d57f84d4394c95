import Benchmark
import BenchmarkSupport
import SerialRuntime
import SerialTesting

// TimerService's core operations. CI gates on `mallocCountTotal` only (see SerialQueueBenchmarks).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = suiteConfiguration

    // 1000 timers 10–60 s out on a real queue, then all cancelled: the wheel's O(1) insert and unlink.
    Benchmark("TimerService.scheduleCancel") { benchmark in
        let queue = startedQueue("bench-timers")
        let service = TimerService(scheduler: queue)
        let delays = FixedDelays.tenToSixtySeconds(benchmark.scaledIterations.count)
        var handles: [TimerHandle] = []
        handles.reserveCapacity(delays.count)
        benchmark.startMeasurement()
        for delay in delays { handles.append(try! service.schedule(after: delay) {}) }
        for handle in handles { blackHole(handle.cancel()) }
        benchmark.stopMeasurement()
        service.stop()
        queue.shutdown()
    }

    // The same with 100k other timers pending: the cost must not depend on how many wait.
    Benchmark("TimerService.scheduleCancel.100kPending") { benchmark in
        let queue = startedQueue("bench-timers")
        let service = TimerService(scheduler: queue)
        let background = FixedDelays.tenToSixtySeconds(100_000).map { try! service.schedule(after: $0) {} }
        let delays = FixedDelays.tenToSixtySeconds(benchmark.scaledIterations.count)
        var handles: [TimerHandle] = []
        handles.reserveCapacity(delays.count)
        benchmark.startMeasurement()
        for delay in delays { handles.append(try! service.schedule(after: delay) {}) }
        for handle in handles { blackHole(handle.cancel()) }
        benchmark.stopMeasurement()
        _ = withExtendedLifetime(background) { service.stop() }
        queue.shutdown()
    }

    // Heartbeats: 1000 timers 10–60 s out, each pushed back to 20–50 s from now in turn, over
    // and over. A re-arm moves the timer in place: its ceiling is zero allocations.
    Benchmark("TimerService.rearm") { benchmark in
        let queue = startedQueue("bench-timers")
        let service = TimerService(scheduler: queue)
        let handles = FixedDelays.tenToSixtySeconds(1_000).map { try! service.schedule(after: $0) {} }
        let pushes = FixedDelays.tenToSixtySeconds(1_000).map { $0 / 2 + .seconds(15) }
        let count = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        for index in 0..<count {
            blackHole(handles[index % 1_000].reschedule(after: pushes[index % 1_000]))
        }
        benchmark.stopMeasurement()
        service.stop()
        queue.shutdown()
    }

    // 1000 timers due within one second fire, on virtual time (no waiting): expiry and delivery.
    Benchmark("TimerService.fire") { benchmark in
        let scheduler = VirtualScheduler()
        let service = TimerService(scheduler: scheduler)
        let count = benchmark.scaledIterations.count
        for index in 0..<count {
            _ = try! service.schedule(after: .milliseconds(1 + Int64(index * 997 % 1000))) {}
        }
        benchmark.startMeasurement()
        blackHole(scheduler.advance(by: .seconds(1)))
        benchmark.stopMeasurement()
        precondition(service.pendingCount == 0, "TimerService.fire: \(service.pendingCount) timers did not fire")
    }
}
