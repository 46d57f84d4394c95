import SerialCore
import SerialCountdown
import SerialTesting

/// A receiver object for tests.
final class Receiver: Sendable, CustomStringConvertible {
    let name: String
    init(_ name: String) { self.name = name }
    var description: String { self.name }
}

/// One handler call, as a test saw it.
struct Call: Sendable, Equatable {
    let name: String
    let tick: CountdownTick
    /// Virtual scheduler time of the call, in whole intervals-free nanoseconds.
    let at: MonotonicInstant
}

/// A virtual scheduler, a boot clock following it, a manager on both, and a log of calls.
///
/// Time: the scheduler starts at 1,000 s; the default interval is one second.
struct CountdownFixture {
    let scheduler = VirtualScheduler()
    let clock: VirtualBootClock
    let manager: CountdownManager
    let log = Log()

    init(interval: Duration = .seconds(1)) {
        self.clock = VirtualBootClock(following: self.scheduler)
        self.manager = CountdownManager(interval: interval, queue: self.scheduler, clock: self.clock)
    }

    /// Registers `receiver` with a handler that records each call (and stops when `stopAt`
    /// returns true for the tick).
    @discardableResult
    func register(
        _ receiver: Receiver, for duration: Duration, label: String? = nil,
        stopWhen stopAt: @escaping @Sendable (CountdownTick) -> Bool = { _ in false }
    ) -> CountdownRegistration {
        let log = self.log
        let scheduler = self.scheduler
        let name = label ?? receiver.name
        return self.manager.register(receiver, for: duration) { _, tick, stop in
            log.append(Call(name: name, tick: tick, at: scheduler.now))
            if stopAt(tick) { stop = true }
        }
    }

    /// Ends every countdown and runs what that schedules, so no armed tick is left holding the
    /// manager (and handlers that capture it) alive after the test: leak checkers stay quiet.
    func tearDown() {
        self.manager.cancelAll()
        self.scheduler.runUntilIdle()
        // A cancelled tick stays in the scheduler until its deadline; pass it so its closure
        // (which holds the manager) is released.
        self.scheduler.advance(by: self.manager.interval * 2)
    }

    /// A new receiver at the address of a released receiver whose countdown is still in the
    /// table. Tries malloc's reuse of a freed block first (glibc hands it back at once); under
    /// sanitizers, which quarantine freed memory, plants the released countdown instead.
    func newcomerAtAReleasedReceiversAddress(oldLabel: String) -> (newcomer: Receiver, byMalloc: Bool) {
        for attempt in 0..<200 {
            var old: Receiver? = Receiver("old\(attempt)")
            let oldIdentity = ObjectIdentifier(old!)
            self.register(old!, for: .seconds(3), label: oldLabel)
            old = nil
            let candidate = Receiver("new")
            if ObjectIdentifier(candidate) == oldIdentity { return (candidate, true) }
        }
        self.manager.cancelAll()  // the tries' stale countdowns; none of them had a live receiver
        let newcomer = Receiver("new")
        let log = self.log
        let scheduler = self.scheduler
        self.manager._plantReleasedReceiver(at: newcomer, for: .seconds(3)) { tick in
            log.append(Call(name: oldLabel, tick: tick, at: scheduler.now))
        }
        return (newcomer, false)
    }

    /// Advances the scheduler one interval at a time, `count` times.
    func tick(_ count: Int = 1, interval: Duration = .seconds(1)) {
        for _ in 0..<count { self.scheduler.advance(by: interval) }
    }
}

/// A thread-safe list of calls.
final class Log: Sendable {
    private let calls = LockedValue<[Call]>([])

    func append(_ call: Call) { self.calls.withLock { $0.append(call) } }

    var all: [Call] { self.calls.withLock { $0 } }

    func calls(of name: String) -> [Call] { self.all.filter { $0.name == name } }

    /// The remaining times `name` was told, in whole seconds.
    func seconds(of name: String) -> [Int64] {
        self.calls(of: name).map { $0.tick.remaining.components.seconds }
    }

    func terminals(of name: String) -> [Call] { self.calls(of: name).filter(\.tick.isFinal) }
}

extension MonotonicInstant {
    /// The virtual scheduler's start time plus `seconds`.
    static func start(plus seconds: Double) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: 1_000_000_000_000 + UInt64(seconds * 1_000_000_000))
    }
}
