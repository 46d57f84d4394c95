import Benchmark
import SerialRuntime

let benchmarks: @Sendable () -> Void = {
    Benchmark("SerialQueue.sync.uncontended") { benchmark in
        let queue = SerialQueue(label: "bench")
        for _ in benchmark.scaledIterations { blackHole(queue.sync { 1 }) }
    }
}
