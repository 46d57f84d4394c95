import Glibc
import SerialCore
import SerialTestSupport
import SerialTesting
@testable import SerialTimers
import Testing

/// `TimerService.Wheel` (the intrusive wheel the service keeps its timers in), checked step by
/// step against a sorted array, plus the per-timer memory it was built for. Half the timers
/// carry a tolerance of a tick or more: the wheel's `nextWakeTick` must never be later than the
/// end of any waiting timer's window, and a driver that wakes there fires each timer inside it.
@Suite("TimerService's intrusive wheel", .onItsOwnThread)  // CPU-bound for seconds: off the cooperative threads
struct TimerWheelTests {
    typealias Timer = TimerService.Timer

    // Checked against `SortedWheelModel`; a move files again. A timer pushed back stays in its
    // slot until that slot comes up, so among the timers due at one tick it may come out before
    // or after others: with moves, the check is due-tick order and the same timers per tick;
    // without, the exact order.

    static let tickNanoseconds: UInt64 = 1_000

    @Test(arguments: [1, 2, 3, 42, 1_000, 0xC0FFEE, 0xDEAD_BEEF, 7_777_777] as [UInt64], [false, true])
    func randomInsertsRemovesMovesAndAdvancesMatchTheSortedArrayModel(seed: UInt64, moves: Bool) {
        var random = SeededRandom(seed: seed)
        let clock = TimerService.TickClock(origin: MonotonicInstant(nanoseconds: 0), tickNanoseconds: Self.tickNanoseconds)
        let wheel = TimerService.Wheel(clock: clock)
        let start = UInt64.random(in: 0..<100_000, using: &random)
        var expired: [Timer] = []
        wheel.advance(to: start, into: &expired)
        var model = SortedWheelModel(now: start)
        var timers: [Timer] = []
        var ids: [ObjectIdentifier: Int] = [:]
        var dueOf: [Int: UInt64] = [:]
        /// Default (one tick) or a tolerance of 1 to 50 ticks, not on a tick boundary.
        func randomTolerance() -> UInt64? {
            Bool.random(using: &random) ? nil : UInt64.random(in: Self.tickNanoseconds..<50 * Self.tickNanoseconds, using: &random)
        }
        /// The last tick `id` may expire at: the end of its window.
        func latest(_ id: Int) -> UInt64 { timers[id].latestTick(due: dueOf[id]!, clock: clock) }
        /// A deadline spread over several levels, some in the past, not on a tick boundary.
        func randomDeadline() -> (MonotonicInstant, UInt64) {
            let scale = [2, 64, 4_096, 262_144, 20_000_000][Int.random(in: 0..<5, using: &random)]
            let tick = max(1, Int(model.now) + Int.random(in: -3..<scale, using: &random))
            let nanoseconds = UInt64(tick) * Self.tickNanoseconds - UInt64.random(in: 0..<Self.tickNanoseconds, using: &random)
            return (MonotonicInstant(nanoseconds: nanoseconds), UInt64(tick))
        }
        for step in 0..<3_000 {
            let context = Comment(rawValue: "seed \(seed), moves \(moves), step \(step), tick \(model.now)")
            switch Int.random(in: 0..<(moves ? 12 : 10), using: &random) {
            case 0..<5:
                let (deadline, tick) = randomDeadline()
                let tolerance = randomTolerance()
                let timer = tolerance.map { TimerService.TolerantTimer(deadline: deadline, tolerance: $0, stage: .pending {}) }
                    ?? Timer(deadline: deadline, stage: .pending {})
                ids[ObjectIdentifier(timer)] = timers.count
                model.file(id: timers.count, due: tick)
                dueOf[timers.count] = max(tick, model.now + 1)
                timers.append(timer)
                wheel.insert(timer)
            case 5..<7:
                guard !timers.isEmpty else { continue }
                let id = Int.random(in: 0..<timers.count, using: &random)  // may be gone already
                #expect(wheel.remove(timers[id]) == model.remove(id: id), context)
            case 10..<12:
                guard !timers.isEmpty else { continue }
                let id = Int.random(in: 0..<timers.count, using: &random)
                guard model.remove(id: id) else {
                    #expect(!timers[id].isWaiting, context)
                    continue
                }
                let (deadline, tick) = randomDeadline()
                wheel.reschedule(timers[id], to: deadline, tolerance: timers[id] is TimerService.TolerantTimer ? randomTolerance() ?? .max : nil)
                model.file(id: id, due: tick)
                dueOf[id] = max(tick, model.now + 1)
            default:
                let target: UInt64
                let toWake = Int.random(in: 0..<3, using: &random)
                if toWake == 0, let next = wheel.nextWakeTick {
                    target = next  // a driver's wake-up: nothing may expire after its window
                } else if toWake == 1, let next = wheel.nextExpiry {
                    target = next
                } else {
                    target = model.now + UInt64.random(in: 0..<[8, 500, 70_000][step % 3], using: &random)
                }
                expired.removeAll()
                wheel.advance(to: target, into: &expired)
                let got = expired.map { ids[ObjectIdentifier($0)]! }
                let expected = model.advance(to: target)
                if moves {
                    let byTick = { (ids: [Int]) in ids.sorted { (dueOf[$0]!, $0) < (dueOf[$1]!, $1) } }
                    #expect(byTick(got) == byTick(expected), context)
                    #expect(got.map { dueOf[$0]! } == got.map { dueOf[$0]! }.sorted(), "in due-tick order; \(context)")
                } else {
                    #expect(got == expected, context)
                }
                #expect(expired.allSatisfy { !$0.isWaiting }, context)
                if toWake == 0 {
                    for id in got { #expect(latest(id) >= target, "timer \(id) expired after its window; \(context)") }
                }
            }
            #expect(wheel.count == model.entries.count, context)
            if let next = wheel.nextExpiry, let earliest = model.entries.first?.due {
                #expect(next <= earliest && next > model.now, context)
                let wake = wheel.nextWakeTick ?? .max
                let windowsEnd = model.entries.map { latest($0.id) }.min()!
                #expect(wake >= next && wake <= windowsEnd && wake > model.now, "wake \(wake), windows end \(windowsEnd); \(context)")
            } else {
                #expect(wheel.nextExpiry == nil && model.entries.isEmpty, context)
            }
        }
        wheel.checkInvariants()
        var removed: [Int] = []
        wheel.removeAll { removed.append(ids[ObjectIdentifier($0)]!) }
        #expect(removed.sorted() == model.entries.map(\.id).sorted())
        #expect(wheel.isEmpty && wheel.nextExpiry == nil)
    }

    @Test func theWheelOwnsTheTimersItHoldsAndReleasesThemWhenItGoes() {
        let clock = TimerService.TickClock(origin: MonotonicInstant(nanoseconds: 0), tickNanoseconds: 1)
        weak var held: Timer?
        weak var removed: Timer?
        do {
            let wheel = TimerService.Wheel(clock: clock)
            do {
                let a = Timer(deadline: MonotonicInstant(nanoseconds: 100), stage: .pending {})
                let b = Timer(deadline: MonotonicInstant(nanoseconds: 5_000), stage: .pending {})
                wheel.insert(a)
                wheel.insert(b)
                held = a
                removed = b
                wheel.remove(b)
            }
            #expect(held != nil, "the wheel keeps a timer nobody else holds")
            #expect(removed == nil, "a removed timer is released")
        }
        #expect(held == nil, "the wheel's deinit releases what it still holds")
    }

    /// The figure the wheel's design is for: a pending one-shot timer is one 64-byte malloc
    /// chunk (56 usable bytes). A field added to `Timer` fails this.
    /// malloc may hand out a larger free chunk than asked for (seen once: 72 usable bytes, with
    /// other tests' frees in the same arena), so the smallest of a few allocations counts.
    @Test func aOneShotTimerIsOneSixtyFourByteChunk() {
        let timers = (0..<16).map { _ in Timer(deadline: .distantFuture, stage: .pending {}) }
        let usable = timers.map { mallocUsableSize(Unmanaged.passUnretained($0).toOpaque()) }.min()!
        #expect(usable <= 56, "a Timer takes \(usable) usable bytes; 56 (a 64-byte chunk) is the budget")
        #expect(MemoryLayout<TimerService.Stage>.size == 16, "the status must fit in the callback's spare values")
    }

    /// Memory goes back only after a mass end: at least `trimThreshold` timers ended by cancel
    /// and the pending count below a quarter of its peak, once per such drop.
    @Test func memoryIsGivenBackOnceAfterAMassCancelAndNotForATrickle() throws {
        let clock = TimerService.TickClock(origin: MonotonicInstant(nanoseconds: 0), tickNanoseconds: 1_000_000)
        var state = TimerService.State(clock: clock)
        let count = 100_000
        var timers: [Timer] = []
        for index in 0..<count {
            let timer = Timer(deadline: MonotonicInstant(nanoseconds: UInt64(10_000_000 + index)), stage: .pending {})
            _ = try state.schedule(timer, nowTick: 0, maximumPending: .max)
            timers.append(timer)
        }
        var trims: [Int] = []
        for (index, timer) in timers.enumerated() {
            #expect(state.cancel(timer) != nil)
            if state.trimAfterMassEnd() { trims.append(index + 1) }
        }
        // The first cancel that leaves fewer than 25,000 pending (of the 100,000 peak), then
        // none until another 65,536 end.
        #expect(trims == [75_001], "trims after cancel number \(trims)")
    }
}

/// glibc's `malloc_usable_size`, which the Glibc module does not export.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int
