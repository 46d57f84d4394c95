import Glibc

/// Clock reads for measurements. Every figure in the table comes from `CLOCK_MONOTONIC`
/// (elapsed) or from the process CPU clock (work done), never from a peer's own clock.
enum Clock {
    /// Nanoseconds on `CLOCK_MONOTONIC`.
    @inline(__always)
    static func now() -> UInt64 {
        Self.read(CLOCK_MONOTONIC)
    }

    /// CPU time consumed by every thread of the process, in nanoseconds.
    static func processCPU() -> UInt64 {
        Self.read(CLOCK_PROCESS_CPUTIME_ID)
    }

    @inline(__always)
    private static func read(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        precondition(clock_gettime(clock, &time) == 0, "clock_gettime(\(clock)) failed with errno \(errno)")
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Voluntary plus involuntary context switches of every thread of the process so far,
    /// exited threads included (`getrusage(RUSAGE_SELF)`).
    static func processContextSwitches() -> Int {
        var usage = rusage()
        precondition(getrusage(RUSAGE_SELF.rawValue, &usage) == 0, "getrusage failed with errno \(errno)")
        return usage.ru_nvcsw + usage.ru_nivcsw
    }

    /// Sleeps the calling thread for `milliseconds`.
    static func sleep(milliseconds: Int) {
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
