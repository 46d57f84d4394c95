/// Every programmer-error trap of SerialTimers, with the words crash tests match.
///
/// A message names the object, the rule that was broken, and the way out.
@usableFromInline
enum TimersMisuse {
    @inline(never)
    static func negativeCapacity(_ capacity: Int) -> String {
        "TimingWheel(capacity: \(capacity)): capacity must be zero or more."
    }

    @usableFromInline
    static let wheelFull =
        "TimingWheel: more than \(Int32.max) elements waiting at once; cancel or expire some before inserting more."


    @inline(never)
    static func invalidTick(_ tick: Duration) -> Never {
        fatalError("""
            TimerService(tick: \(tick)): the tick must be at least one nanosecond. \
            Pass the resolution you need, e.g. .milliseconds(1).
            """)
    }

    @inline(never)
    static func invalidTimeoutTick(_ tick: Duration) -> Never {
        fatalError("""
            TimeoutManager(tick: \(tick)): the tick must be at least one nanosecond. \
            Pass the resolution your deadlines need, e.g. .milliseconds(1).
            """)
    }

    @inline(never)
    static func invalidPeriod(_ period: Duration) -> Never {
        fatalError("""
            TimerService.schedule(every: \(period)): the period must be at least one nanosecond. \
            Pass a positive interval, e.g. .seconds(1).
            """)
    }

    @inline(never)
    static func negativeTolerance(_ tolerance: Duration) -> Never {
        fatalError("""
            TimerService: tolerance \(tolerance) is negative; a timer never fires before its deadline. \
            Pass .zero for a precise timer, more to let its wake-up be shared, or nil for one tick.
            """)
    }

    @inline(never)
    static func invalidMaximumPending(_ value: Int) -> Never {
        fatalError("""
            TimerService(maximumPending: \(value)): the maximum must be at least 1. \
            Pass Int.max for no limit.
            """)
    }

    @inline(never)
    static func invalidCallbacksPerTurn(_ value: Int) -> Never {
        fatalError("""
            TimerService(callbacksPerTurn: \(value)): at least one callback must run per turn, \
            or due timers would never fire. Pass a positive bound, e.g. 1024.
            """)
    }

    @inline(never)
    static func invalidWorkerCount(_ value: Int) -> Never {
        fatalError("""
            TimeoutManager(workerCount: \(value)): blocking operations need at least one worker queue. \
            Pass a small positive count, e.g. 2.
            """)
    }

    @inline(never)
    static func noWorkers() -> Never {
        fatalError("""
            TimeoutManager(workers: []): blocking operations need at least one worker scheduler. \
            Pass one or more, or use init(scheduler:workerCount:) to get SerialQueue workers.
            """)
    }

    @inline(never)
    static func invalidMaximumInFlight(_ value: Int) -> Never {
        fatalError("""
            TimeoutManager(maximumInFlight: \(value)): the maximum must be at least 1. \
            Pass Int.max for no limit.
            """)
    }

    @inline(never)
    static func negativeTimeout(_ timeout: Duration) -> Never {
        fatalError("""
            TimeoutManager: timeout \(timeout) is negative; pass zero or more \
            (zero times out at the next tick unless the result is already in).
            """)
    }
}
