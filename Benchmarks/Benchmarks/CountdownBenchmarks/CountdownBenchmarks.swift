import Benchmark
import BenchmarkSupport
import SerialRuntime
import SerialTesting

// CountdownManager's core operations, on virtual time. CI gates on `mallocCountTotal` only.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = suiteConfiguration

    // One shared tick over 1000 countdowns: every handler called once.
    Benchmark("CountdownManager.tick") { benchmark in
        let (scheduler, manager) = virtualManager()
        let receivers = (0..<benchmark.scaledIterations.count).map { _ in Receiver() }
        for receiver in receivers { manager.register(receiver, for: .seconds(3600)) { _, _, _ in } }
        _ = scheduler.advance(by: .seconds(1))  // the first tick: the ticker's own start-up
        benchmark.startMeasurement()
        blackHole(scheduler.advance(by: .seconds(1)))
        benchmark.stopMeasurement()
        precondition(manager.count == receivers.count, "CountdownManager.tick: countdowns ended early")
        manager.cancelAll()
        _ = scheduler.advance(by: .seconds(1))
    }

    // 1000 registrations of distinct receivers on a running ticker.
    Benchmark("CountdownManager.register") { benchmark in
        let (scheduler, manager) = virtualManager()
        let receivers = (0..<benchmark.scaledIterations.count).map { _ in Receiver() }
        benchmark.startMeasurement()
        for receiver in receivers { manager.register(receiver, for: .seconds(3600)) { _, _, _ in } }
        benchmark.stopMeasurement()
        manager.cancelAll()
        _ = scheduler.advance(by: .seconds(1))
    }
}

/// A receiver with nothing in it: the handler's work is not what is measured.
private final class Receiver: Sendable {}

private func virtualManager() -> (VirtualScheduler, CountdownManager) {
    let scheduler = VirtualScheduler()
    let clock = VirtualBootClock(following: scheduler)
    return (scheduler, CountdownManager(interval: .seconds(1), queue: scheduler, clock: clock))
}
