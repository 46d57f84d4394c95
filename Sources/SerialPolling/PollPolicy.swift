/// How a `Poller` paces its queries: cadence, error backoff, timeouts.
///
/// A plain value; a `Poller` checks it once, in its initializer, and traps on a value that
/// cannot work (a zero interval, a maximum delay below the minimum...), naming the field.
///
/// ```swift
/// var policy = PollPolicy(interval: .milliseconds(500))
/// policy.attemptTimeout = .seconds(2)      // one query may take at most 2 s
/// policy.deadline = .seconds(60)           // the whole poll at most 60 s
/// policy.backoff = .init(minimumDelay: .milliseconds(200), maximumDelay: .seconds(5), maximumConsecutiveErrors: 4)
/// ```
public struct PollPolicy: Sendable, Hashable {
    /// Error handling: exponential backoff with full jitter between two delays, and how many
    /// consecutive errors end the poll.
    public struct Backoff: Sendable, Hashable {
        /// The delay after the first error of a run of errors, and the floor of every later one.
        public var minimumDelay: Duration
        /// The ceiling of every error delay, including server hints.
        public var maximumDelay: Duration
        /// The number of consecutive errors that ends the poll with `failed(lastError)`. A
        /// success resets the count. `1` means "fail on the first error".
        public var maximumConsecutiveErrors: Int

        /// Creates a backoff policy; see the properties for the meaning of each value.
        public init(
            minimumDelay: Duration = .milliseconds(100),
            maximumDelay: Duration = .seconds(10),
            maximumConsecutiveErrors: Int = 5
        ) {
            self.minimumDelay = minimumDelay
            self.maximumDelay = maximumDelay
            self.maximumConsecutiveErrors = maximumConsecutiveErrors
        }
    }

    /// The time from one query's start to the next one's start, when responses come quickly.
    /// A slower response delays the next query until the response is in: the next query starts
    /// at `max(previous start + interval, previous response)`.
    public var interval: Duration
    /// Whether the first query starts at once (`true`) or one `interval` after `start`.
    public var startsImmediately: Bool
    /// The longest one query may take; past it, its response is ignored and the attempt counts
    /// as an error (`PollError.attemptTimedOut`). `nil`: no per-attempt limit.
    public var attemptTimeout: Duration?
    /// The longest the whole poll may take, from `start`; past it the poll ends with
    /// `timedOut`. The last attempt's timeout is shortened to end at the deadline, and a query
    /// that would start at or after it is not started. `nil`: no overall limit.
    public var deadline: Duration?
    /// What happens after an error.
    public var backoff: Backoff

    /// Creates a policy; see the properties for the meaning of each value.
    public init(
        interval: Duration,
        startsImmediately: Bool = true,
        attemptTimeout: Duration? = nil,
        deadline: Duration? = nil,
        backoff: Backoff = Backoff()
    ) {
        self.interval = interval
        self.startsImmediately = startsImmediately
        self.attemptTimeout = attemptTimeout
        self.deadline = deadline
        self.backoff = backoff
    }

    /// Traps, naming the field and the rule, when this policy cannot work.
    func validate() {
        if self.interval <= .zero {
            PollingMisuse.invalidPolicy("interval", "\(self.interval)", "must be greater than zero")
        }
        if let timeout = self.attemptTimeout, timeout <= .zero {
            PollingMisuse.invalidPolicy("attemptTimeout", "\(timeout)", "must be greater than zero, or nil for none")
        }
        if let deadline = self.deadline, deadline <= .zero {
            PollingMisuse.invalidPolicy("deadline", "\(deadline)", "must be greater than zero, or nil for none")
        }
        if self.backoff.minimumDelay < .zero {
            PollingMisuse.invalidPolicy("backoff.minimumDelay", "\(self.backoff.minimumDelay)", "must not be negative")
        }
        if self.backoff.maximumDelay < self.backoff.minimumDelay {
            PollingMisuse.invalidPolicy(
                "backoff.maximumDelay", "\(self.backoff.maximumDelay)",
                "must not be below backoff.minimumDelay (\(self.backoff.minimumDelay))")
        }
        if self.backoff.maximumConsecutiveErrors < 1 {
            PollingMisuse.invalidPolicy(
                "backoff.maximumConsecutiveErrors", "\(self.backoff.maximumConsecutiveErrors)",
                "must be at least 1 (1 fails on the first error)")
        }
    }
}
