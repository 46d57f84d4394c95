// Helpers shared by the package-benchmark suites (not measured themselves).
import Benchmark
import Glibc
import SerialRuntime

/// Allocation ceilings are the p90 counts per iteration recorded in Thresholds/. A run may differ
/// by a few (a FIFO ring grows, or not, depending on how far the producer got ahead of the
/// worker); one allocation more per operation is a thousand more per iteration and fails.
public enum SuiteThresholds {
    public static var mallocCount: BenchmarkThresholds { BenchmarkThresholds(absolute: [.p90: 16]) }
}

/// The configuration every suite runs with: 1000 operations per iteration, allocations gated by
/// the ceilings above, wall clock and throughput recorded for reading only.
public var suiteConfiguration: Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: [.mallocCountTotal, .wallClock, .throughput],
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 200,
        thresholds: [.mallocCountTotal: SuiteThresholds.mallocCount]
    )
}

/// A queue whose worker thread has started and made its own allocations (thread-local state,
/// batch buffer), and whose caller has made its thread-local state, so that none of that lands
/// in the measured region.
public func startedQueue(_ label: String) -> SerialQueue {
    let queue = SerialQueue(label: label)
    let started = OneShotLatch()
    queue.async { started.open() }
    started.wait()
    queue.sync {}
    return queue
}

/// A one-shot gate (e.g. for the end of a ping-pong rally), on a pthread mutex and condition variable made
/// before the measurement starts, so waiting adds no allocation to what is measured.
public final class OneShotLatch: @unchecked Sendable {  // `isOpen` is guarded by `mutex`
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let opened = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var isOpen = false

    public init() {
        pthread_mutex_init(self.mutex, nil)
        pthread_cond_init(self.opened, nil)
    }

    deinit {
        pthread_cond_destroy(self.opened)
        pthread_mutex_destroy(self.mutex)
        self.opened.deallocate()
        self.mutex.deallocate()
    }

    public func open() {
        pthread_mutex_lock(self.mutex)
        self.isOpen = true
        pthread_cond_signal(self.opened)
        pthread_mutex_unlock(self.mutex)
    }

    public func wait() {
        pthread_mutex_lock(self.mutex)
        while !self.isOpen { pthread_cond_wait(self.opened, self.mutex) }
        pthread_mutex_unlock(self.mutex)
    }
}

/// The same pseudo-random delays every run: 10–60 s, spread evenly by a fixed LCG.
public enum FixedDelays {
    public static func tenToSixtySeconds(_ count: Int) -> [Duration] {
        var state: UInt64 = 0x5E71A1
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return .milliseconds(10_000 + Int64((state >> 33) % 50_000))
        }
    }
}
