#if SERIAL_LOCK_STATISTICS
import Glibc

/// Acquisitions and hold times of one `PthreadMutex`, in a build instrumented for measuring
/// locks (`SERIAL_LOCK_STATISTICS=1` when building: see `scripts/pool-lock-statistics.sh`).
/// Every field is written by the thread that holds the mutex, so the mutex guards them.
///
/// Hold times include one clock read of the instrumentation (about 20 ns on this VM), so they
/// are an upper bound; counts are exact.
struct LockStatistics {
    /// Times the mutex was taken (a condition wait's re-acquisition counts as one).
    private(set) var acquisitions = 0
    /// Acquisitions that found the mutex held by another thread.
    private(set) var contended = 0
    /// Total nanoseconds the mutex was held.
    private(set) var heldNanoseconds: UInt64 = 0
    private var lockedAt: UInt64 = 0

    mutating func acquired(contended: Bool) {
        self.acquisitions += 1
        if contended { self.contended += 1 }
        self.lockedAt = Self.now()
    }

    mutating func releasing() {
        self.heldNanoseconds &+= Self.now() &- self.lockedAt
    }

    /// Counts from zero again (with the mutex held).
    mutating func reset() {
        let lockedAt = self.lockedAt
        self = LockStatistics()
        self.lockedAt = lockedAt
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
#endif
