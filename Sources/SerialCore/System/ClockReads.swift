import Glibc

/// Reads of the kernel clocks this library schedules by.
enum ClockReads {
    /// Nanoseconds on `CLOCK_MONOTONIC`: steady, stops while the system is suspended.
    @inline(__always)
    static func monotonicNanoseconds() -> UInt64 {
        // Seam: a simulated thread reads virtual time, and each read is a scheduling point.
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current { return thread.kernel.readClock(by: thread) }
        #endif
        return Self.read(CLOCK_MONOTONIC, "clock_gettime(CLOCK_MONOTONIC)")
    }

    @inline(__always)
    private static func read(_ clock: clockid_t, _ call: StaticString) -> UInt64 {
        var time = timespec()
        if _slowPath(clock_gettime(clock, &time) != 0) { fatalError("\(call) failed with errno \(errno)") }
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
