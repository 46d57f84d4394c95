import SerialCore
import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Random schedules, cancels, re-arms (with and without a new tolerance) and advances of a
/// `TimerService` on virtual time, where a wake-up runs exactly when it is armed: every
/// callback runs inside its window [deadline, deadline + tolerance] (one tick for the
/// default), never early, exactly once, and a cancelled timer never runs.
@Suite("TimerService tolerance against its windows", .onItsOwnThread)  // CPU-bound for seconds: off the cooperative threads
struct TimerTolerancePropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 42, 1_000, 0xC0FFEE, 0xDEAD_BEEF, 7_777_777]
    static let tick: Duration = .milliseconds(1)

    /// A window as asked: the callback may run from `start` to `end`, both included.
    struct Window {
        var start: MonotonicInstant
        var end: MonotonicInstant
    }

    static func randomTolerance(_ random: inout SeededRandom) -> Duration? {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return nil
        case 1: return .zero
        case 2: return .microseconds(Int64.random(in: 1..<1_000, using: &random))  // under a tick: precise
        case 3: return Self.tick
        default: return .microseconds(Int64.random(in: 1_000..<40_000, using: &random))  // coalesced
        }
    }

    static func randomDelay(_ random: inout SeededRandom) -> Duration {
        let scale: Int64 = [50, 3_000, 70_000, 2_000_000][Int.random(in: 0..<4, using: &random)]
        return .microseconds(Int64.random(in: 0..<scale, using: &random))
    }

    @Test(arguments: seeds)
    func everyCallbackRunsInsideItsWindowExactlyOnce(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let scheduler = VirtualScheduler()
        let timers = TimerService(scheduler: scheduler, tick: Self.tick, callbacksPerTurn: 16)
        let firings = LockedValue<[(id: Int, at: MonotonicInstant)]>([])
        var handles: [TimerHandle] = []
        var windows: [Int: Window] = [:]  // of timers not cancelled
        var tolerances: [Int: Duration?] = [:]
        /// A default timer keeps one tick whatever it is given later (except under a tick).
        var scheduledWithTolerance: [Int: Bool] = [:]
        func window(_ deadline: MonotonicInstant, _ tolerance: Duration?) -> Window {
            let start = max(deadline, scheduler.now)  // a past deadline: from now on
            return Window(start: start, end: start + (tolerance ?? Self.tick))
        }
        for step in 0..<1_500 {
            let context = Comment(rawValue: "seed \(seed), step \(step), now \(scheduler.now)")
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                let id = handles.count
                let tolerance = Self.randomTolerance(&random)
                let deadline = scheduler.now + Self.randomDelay(&random)
                handles.append(try timers.schedule(at: deadline, tolerance: tolerance) {
                    firings.withLock { $0.append((id, scheduler.now)) }
                })
                windows[id] = window(deadline, tolerance)
                tolerances[id] = tolerance
                scheduledWithTolerance[id] = tolerance != nil
            case 4:
                guard !handles.isEmpty else { continue }
                let id = Int.random(in: 0..<handles.count, using: &random)
                if handles[id].cancel() { windows[id] = nil }
            case 5..<7:
                guard !handles.isEmpty else { continue }
                let id = Int.random(in: 0..<handles.count, using: &random)
                let deadline = scheduler.now + Self.randomDelay(&random)
                let newTolerance: Duration?? = Bool.random(using: &random) ? .some(Self.randomTolerance(&random)) : .none
                let outcome = handles[id].reschedule(at: deadline, tolerance: newTolerance ?? nil)
                guard outcome == .movedToNewDeadline else { continue }
                if case .some(let given) = newTolerance, let given {
                    // A default timer given a tick or more keeps its one tick (inside the window).
                    let kept = scheduledWithTolerance[id]! || given < Self.tick ? given : Self.tick
                    tolerances[id] = .some(kept)
                }
                windows[id] = window(deadline, tolerances[id]!)
            default:
                if Bool.random(using: &random), let next = scheduler.nextDeadline {
                    scheduler.advance(to: next)
                } else {
                    scheduler.advance(by: Self.randomDelay(&random))
                }
            }
            for firing in firings.withLock({ fired in defer { fired = [] }; return fired }) {
                guard let window = windows[firing.id] else {
                    Issue.record("timer \(firing.id) ran cancelled or twice at \(firing.at); \(context)")
                    continue
                }
                #expect(firing.at >= window.start, "timer \(firing.id) early: \(firing.at) < \(window.start); \(context)")
                #expect(firing.at <= window.end, "timer \(firing.id) late: \(firing.at) > \(window.end); \(context)")
                windows[firing.id] = nil  // ran: a second run is caught above
            }
        }
        scheduler.advance(by: .seconds(10))
        let late = firings.withLock { $0 }
        for firing in late {
            #expect(windows[firing.id].map { firing.at >= $0.start && firing.at <= $0.end } == true, "timer \(firing.id)")
            windows[firing.id] = nil
        }
        #expect(windows.isEmpty, "timers that never ran: \(windows.keys.sorted())")
        #expect(timers.pendingCount == 0)
    }
}
