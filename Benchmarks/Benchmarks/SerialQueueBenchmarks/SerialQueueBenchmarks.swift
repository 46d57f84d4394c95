import Benchmark
import BenchmarkSupport
import SerialRuntime

// SerialQueue's core operations. CI gates on `mallocCountTotal` only (Thresholds/, checked by
// check-thresholds.sh); wall clock and throughput are recorded for reading, not gated.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = suiteConfiguration

    // 1000 empty tasks from one producer, until the queue has drained them.
    Benchmark("SerialQueue.async.1p") { benchmark in
        let queue = startedQueue("bench-async")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { queue.async {} }
        queue.sync {}  // returns once everything before it ran
        benchmark.stopMeasurement()
        queue.shutdown()
    }

    // 1000 empty sync calls on an idle queue: taken over directly, no hand-off.
    Benchmark("SerialQueue.sync.uncontended") { benchmark in
        let queue = startedQueue("bench-sync")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(queue.sync { 1 }) }
        benchmark.stopMeasurement()
        queue.shutdown()
    }

    // 1000 sync calls each behind an async task, so every call waits its turn on its own wake-up.
    Benchmark("SerialQueue.sync.behindAsync") { benchmark in
        let queue = startedQueue("bench-syncq")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            queue.async {}
            blackHole(queue.sync { 1 })
        }
        benchmark.stopMeasurement()
        queue.shutdown()
    }

    // 1000 hops between two queues, each hop enqueued by work running on the other queue.
    Benchmark("SerialQueue.pingpong") { benchmark in
        let ping = startedQueue("bench-ping")
        let pong = startedQueue("bench-pong")
        let done = OneShotLatch()
        let hops = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        Rally(ping: ping, pong: pong, hops: hops, done: done).hop(0)
        done.wait()
        benchmark.stopMeasurement()
        ping.shutdown()
        pong.shutdown()
    }

    // 1000 delayed works scheduled 10–60 s out, then all cancelled (the queue's own heap).
    Benchmark("SerialQueue.asyncAfter.scheduleCancel") { benchmark in
        let queue = startedQueue("bench-after")
        let delays = FixedDelays.tenToSixtySeconds(benchmark.scaledIterations.count)
        var handles: [DelayedWork] = []
        handles.reserveCapacity(delays.count)
        benchmark.startMeasurement()
        for delay in delays { handles.append(queue.asyncAfter(delay: delay) {}) }
        for handle in handles { blackHole(handle.cancel()) }
        benchmark.stopMeasurement()
        queue.shutdown()
    }
}

/// One ping-pong rally: hop `index` runs on `pong` when even, on `ping` when odd.
private final class Rally: Sendable {
    let ping: SerialQueue
    let pong: SerialQueue
    let hops: Int
    let done: OneShotLatch

    init(ping: SerialQueue, pong: SerialQueue, hops: Int, done: OneShotLatch) {
        (self.ping, self.pong, self.hops, self.done) = (ping, pong, hops, done)
    }

    func hop(_ index: Int) {
        if index == self.hops {
            self.done.open()
            return
        }
        (index.isMultiple(of: 2) ? self.pong : self.ping).async { self.hop(index + 1) }
    }
}
